// A .cpp outside hip/ and rocm/: never counted, never listed.
__global__ void k(float *a) { a[0] = 0; }
