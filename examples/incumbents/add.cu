// Hand-written add (f32) for CUDA and HIP, written naively: y[i] = a[i] + b[i] over the n
// elements of the rows x n operands, one thread per element, no vector loads, no grid-stride
// loop (the grid covers n: cdiv(n, 256) blocks of 256). HIP compiles the same text.
#if defined(__HIP__) && !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h> // hipcc; HIPRTC, NVRTC and the host emulation need no header
#endif
extern "C" __global__ void hand_add_f32(const float* a, const float* b, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a[i] + b[i];
    }
}
