#pragma once

// Helpers shared by the kernels.
__device__ inline float sq(float x) {
    return x * x; // square
}
