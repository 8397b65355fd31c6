// Stub: the host-execution (level H) emulation of <hip/hip_fp16.h>.
#include "../oshost_cuda.h"
