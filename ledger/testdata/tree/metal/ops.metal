// Metal fixture.
#include <metal_stdlib>
using namespace metal;

constant float weights[4] = {
    0.25f, 0.25f,
    0.25f, 0.25f,
};

kernel void scale(device float *a [[buffer(0)]],
                  uint i [[thread_position_in_grid]]) {
    a[i] *= weights[i % 4]; /* weighted */
}
