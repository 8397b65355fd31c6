// A fake CUDA driver and NVRTC for the runtime's tests on machines without an NVIDIA GPU
// (runtime_fake_test.go builds it with the host C compiler). It implements the entry points the
// runtime calls with the real signatures, checks what a real driver would refuse (a call without
// the context current on the calling thread, a launch on another stream, a bad image, NVRTC
// without --fmad=false), and runs two kernels on the CPU: saxpy(float* y, const float* x,
// float a, unsigned n) and empty(). It counts launches and waits (fake_launches, fake_syncs).
// It proves the plumbing (argument order, pointers, versioned symbols, errors), not any GPU
// behaviour. Build with -ffp-contract=off.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

#define CTX ((void *)0xC0C0)
#define STREAM ((void *)0x5757)

static __thread void *current;  // the context current on this thread
static int retained;
static long live_allocs;

// Exported for the test: how many device allocations are live, how many launches ran.
long fake_live_allocs(void) { return live_allocs; }
static long launches;
long fake_launches(void) { return launches; }
static long syncs;  // waits: cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize
long fake_syncs(void) { return syncs; }

CUresult cuInit(unsigned flags) { return flags == 0 ? 0 : 1; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) {
	if (r == 4242) { *s = "CUDA_ERROR_FAKE_4242"; return 0; }
	return 1;
}
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) {
	if (ordinal != 0) return 101;
	*d = 7;  // a CUdevice that is not the ordinal: the runtime must pass it back, not the index
	return 0;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
	if (dev != 7 || len < 32) return 101;
	strcpy(name, "Fake CUDA Device");
	return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
	if (dev != 7) return 101;
	switch (attr) {
	case 1: *v = 1024; return 0;                // max threads per block
	case 2: case 3: *v = 1024; return 0;        // max block x, y
	case 4: *v = 64; return 0;                  // max block z
	case 5: *v = 2147483647; return 0;          // max grid x
	case 6: case 7: *v = 65535; return 0;       // max grid y, z
	case 8: *v = 49152; return 0;               // shared memory per block
	case 10: *v = 32; return 0;                 // warp size
	case 16: *v = 132; return 0;                // multiprocessors
	case 33: *v = 0x1b; return 0;               // PCI bus
	case 34: *v = 0; return 0;                  // PCI device
	case 38: *v = 50 << 20; return 0;           // L2
	case 50: *v = 0; return 0;                  // PCI domain
	case 75: *v = 9; return 0;                  // compute capability
	case 76: *v = 0; return 0;
	case 97: *v = 232448; return 0;             // opt-in shared memory
	}
	return 1;  // the clock rates: "not supported" (as CUDA 13 may answer)
}
CUresult cuDeviceTotalMem_v2(size_t *b, int dev) { *b = (size_t)141 << 30; return dev == 7 ? 0 : 101; }
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
	if (dev != 7) return 101;
	*ctx = CTX;
	retained++;
	return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { retained--; return dev == 7 ? 0 : 101; }
CUresult cuCtxSetCurrent(void *ctx) { current = ctx; return 0; }
CUresult cuCtxSynchronize(void) { syncs++; return current == CTX ? 0 : 201; }

#define NEED_CTX() do { if (current != CTX) return 201; } while (0)  // CUDA_ERROR_INVALID_CONTEXT

typedef struct { char *image; } module;
typedef struct { module *m; char name[64]; } function;

CUresult cuModuleLoadData(void **mod, const void *image) {
	NEED_CTX();
	if (strncmp((const char *)image, "//FAKEPTX", 9) != 0) return 200;  // CUDA_ERROR_INVALID_IMAGE
	module *m = malloc(sizeof *m);
	m->image = strdup((const char *)image);
	*mod = m;
	return 0;
}
CUresult cuModuleUnload(void *mod) {
	module *m = mod;
	free(m->image);
	free(m);
	return 0;
}
CUresult cuModuleGetFunction(void **fn, void *mod, const char *name) {
	NEED_CTX();
	module *m = mod;
	char decl[96];
	snprintf(decl, sizeof decl, "void %s(", name);
	if (strlen(name) >= 64 || !strstr(m->image, decl)) return 500;  // CUDA_ERROR_NOT_FOUND
	function *f = calloc(1, sizeof *f);
	f->m = m;
	strcpy(f->name, name);
	*fn = f;
	return 0;
}
CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
	switch (attr) {
	case 0: *v = 1024; return 0;
	case 1: *v = 0; return 0;
	case 4: *v = 16; return 0;
	}
	return 1;
}
CUresult cuFuncGetParamInfo(void *fn, size_t i, size_t *off, size_t *size) {
	function *f = fn;
	static const size_t saxpy[] = {8, 8, 4, 4};
	if (strcmp(f->name, "saxpy") == 0 && i < 4) {
		*off = i < 2 ? 8 * i : 16 + 4 * (i - 2);
		*size = saxpy[i];
		return 0;
	}
	return 1;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	NEED_CTX();
	void *m = malloc(n);
	if (!m) return 2;
	memset(m, 0xAB, n);  // garbage: NewBuffer must clear it
	*p = (CUdeviceptr)(uintptr_t)m;
	live_allocs++;
	return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { NEED_CTX(); free((void *)(uintptr_t)p); live_allocs--; return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { NEED_CTX(); memcpy((void *)(uintptr_t)dst, src, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { NEED_CTX(); memcpy(dst, (void *)(uintptr_t)src, n); return 0; }
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) { NEED_CTX(); memset((void *)(uintptr_t)p, v, n); return 0; }
CUresult cuStreamCreate(void **s, unsigned flags) { NEED_CTX(); *s = STREAM; return flags == 0 ? 0 : 1; }
CUresult cuStreamDestroy_v2(void *s) { return s == STREAM ? 0 : 400; }
CUresult cuStreamSynchronize(void *s) { NEED_CTX(); syncs++; return s == STREAM ? 0 : 400; }

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
	NEED_CTX();
	function *f = fn;
	if (stream != STREAM || extra != NULL || shared != 0) return 1;
	if ((unsigned long long)bx * by * bz > 1024) return 1;
	launches++;
	if (strcmp(f->name, "saxpy") == 0) {
		float *y = *(float **)params[0];
		const float *x = *(const float **)params[1];
		float a = *(float *)params[2];
		unsigned n = *(unsigned *)params[3];
		unsigned long long threads = (unsigned long long)gx * gy * gz * bx * by * bz;
		for (unsigned long long i = 0; i < threads && i < n; i++) {
			float p = a * x[i];  // two roundings: built with -ffp-contract=off
			y[i] = p + y[i];
		}
		return 0;
	}
	if (strcmp(f->name, "empty") == 0) return params == NULL ? 0 : 1;
	return 719;  // CUDA_ERROR_LAUNCH_FAILED
}

typedef struct { double t; } event;
static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
CUresult cuEventCreate(void **e, unsigned flags) { NEED_CTX(); *e = calloc(1, sizeof(event)); return flags == 0 ? 0 : 1; }
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) { NEED_CTX(); ((event *)e)->t = now(); return s == STREAM ? 0 : 400; }
CUresult cuEventSynchronize(void *e) { NEED_CTX(); syncs++; return 0; }
CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
	*ms = (float)((((event *)b)->t - ((event *)a)->t) * 1e3) + 0.001f;
	return 0;
}

// NVRTC.
typedef struct { char *src; char *log; } program;
int nvrtcVersion(int *major, int *minor) { *major = 13; *minor = 0; return 0; }
static const int archs[] = {75, 80, 86, 87, 89, 90, 100, 120};
int nvrtcGetNumSupportedArchs(int *n) { *n = sizeof archs / sizeof archs[0]; return 0; }
int nvrtcGetSupportedArchs(int *a) { memcpy(a, archs, sizeof archs); return 0; }
const char *nvrtcGetErrorString(int r) { return "NVRTC_ERROR_FAKE"; }
int nvrtcCreateProgram(void **prog, const char *src, const char *name, int nh, const char *const *h, const char *const *hn) {
	if (!src || !name || nh != 0) return 3;
	program *p = calloc(1, sizeof *p);
	p->src = strdup(src);
	p->log = strdup("");
	*prog = p;
	return 0;
}
int nvrtcDestroyProgram(void **prog) {
	program *p = *prog;
	free(p->src);
	free(p->log);
	free(p);
	*prog = NULL;
	return 0;
}
int nvrtcCompileProgram(void *prog, int n, const char *const *opts) {
	program *p = prog;
	int fmad = 0, arch = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(opts[i], "--fmad=false") == 0) fmad = 1;
		if (strcmp(opts[i], "--gpu-architecture=sm_90") == 0) arch = 1;
	}
	free(p->log);
	if (!fmad || !arch) {
		p->log = strdup("fake nvrtc: want --gpu-architecture=sm_90 and --fmad=false\n");
		return 5;  // NVRTC_ERROR_INVALID_OPTION
	}
	if (strstr(p->src, "undeclared_thing")) {
		p->log = strdup("k.cu(1): error: identifier \"undeclared_thing\" is undefined\n");
		return 6;  // NVRTC_ERROR_COMPILATION
	}
	p->log = strdup("");
	return 0;
}
int nvrtcGetProgramLogSize(void *prog, size_t *n) { *n = strlen(((program *)prog)->log) + 1; return 0; }
int nvrtcGetProgramLog(void *prog, char *log) { strcpy(log, ((program *)prog)->log); return 0; }
static size_t image_size(program *p) { return 9 + 1 + strlen(p->src) + 1; }
static void image(program *p, char *out) {
	strcpy(out, "//FAKEPTX\n");
	strcat(out, p->src);
}
int nvrtcGetPTXSize(void *prog, size_t *n) { *n = image_size(prog); return 0; }
int nvrtcGetPTX(void *prog, char *out) { image(prog, out); return 0; }
int nvrtcGetCUBINSize(void *prog, size_t *n) { *n = image_size(prog); return 0; }
int nvrtcGetCUBIN(void *prog, char *out) { image(prog, out); return 0; }
