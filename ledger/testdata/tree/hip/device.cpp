// A HIP source with a kernel, as a .cpp file in a hip/ folder.
#include <hip/hip_runtime.h>

__global__ void scale(float *a, float s) {
    a[threadIdx.x] *= s;
}
