__global__ void add(float *a) { a[0] += 1; }
