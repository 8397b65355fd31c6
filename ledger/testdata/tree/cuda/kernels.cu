// kernels.cu: hand-written CUDA fixture.
/* A block comment
   spanning three lines */

#include "common.cuh"

__global__ void add(const float *a, float *b, int n) { // trailing comment
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    /* inline */ if (i < n) b[i] += a[i]; /* two */
    /* only a comment */
}

__device__ const char *msg = "// not a comment /* nor this";
__device__ const char slash = '/';
__device__ const char quote = '"';
__device__ const char *esc = "a \" // still string";
// a line comment continued \
   onto this line by the backslash
int x = 1; /* a block that
ends here */ int y = 2;
/* a block that
   ends here */
	
