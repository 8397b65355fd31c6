#include <hip/hip_runtime.h>
/*
 * HIP kernel.
 */
__global__ void add(float *a) {
    a[threadIdx.x] += 1.0f;
}
