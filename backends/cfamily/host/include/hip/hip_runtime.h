// Stub: the host-execution (level H) emulation of <hip/hip_runtime.h>.
#include "../oshost_cuda.h"
