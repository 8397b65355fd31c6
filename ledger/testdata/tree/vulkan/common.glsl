// Shared by the shaders.
#include "inc/types.glsl"
float scale(float x) { return x * p.eps; }
