// Stub: the host-execution (level H) emulation of <cuda_fp16.h>.
#include "oshost_cuda.h"
