// Stub: the host-execution (level H) emulation of <cuda_runtime.h>.
#include "oshost_cuda.h"
