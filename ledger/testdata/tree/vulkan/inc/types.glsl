/* Buffer layout. */
layout(binding = 0) buffer Data { float data[]; };
layout(push_constant) uniform P { float eps; } p;
