// Host-side declarations: not a kernel.
#pragma once
#define __device__
void launch(float *a);
