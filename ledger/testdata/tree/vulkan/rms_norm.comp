#version 450
#extension GL_GOOGLE_include_directive : require

#include "common.glsl"
// #include "unused.glsl" is only mentioned in a comment

layout(local_size_x = 64) in;
void main() {
    /* normalize */
    data[gl_GlobalInvocationID.x] = scale(data[gl_GlobalInvocationID.x]);
}
