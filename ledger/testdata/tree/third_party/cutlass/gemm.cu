__global__ void gemm(float *c) {
    c[0] = 0;
}
