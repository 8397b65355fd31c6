// A fake HIP runtime and HIPRTC for the runtime's tests on machines without an AMD GPU
// (runtime_fake_test.go builds it with the host C compiler). It implements the entry points the
// runtime calls with the real signatures, exports hipGetDeviceProperties only as the ROCm 6
// versioned symbol hipGetDevicePropertiesR0600 (with gcnArchName where the R0600 layout has it,
// not where ROCm 5's has it), checks what a real runtime would refuse (a call without the device
// current on the calling thread, a launch on another stream, a bad code object, HIPRTC without
// -ffp-contract=off) and runs saxpy(float* y, const float* x, float a, unsigned n) on the CPU.
// Build with -ffp-contract=off.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int hipError_t;
#define STREAM ((void *)0x5757)
#define HIPDEV 5  // the hipDevice_t of ordinal 0: not the ordinal, to catch one passed for the other

static __thread int current = -1;  // the device current on this thread
static long live_allocs;
long fake_live_allocs(void) { return live_allocs; }
static long syncs;  // waits: hipStreamSynchronize, hipEventSynchronize
long fake_syncs(void) { return syncs; }

hipError_t hipInit(unsigned flags) { return flags == 0 ? 0 : 1; }
hipError_t hipRuntimeGetVersion(int *v) { *v = 60443483; return 0; }
hipError_t hipDriverGetVersion(int *v) { *v = 60443483; return 0; }
const char *hipGetErrorName(hipError_t e) { return e == 4242 ? "hipErrorFake4242" : "hipErrorUnknown"; }
hipError_t hipGetDeviceCount(int *n) { *n = 1; return 0; }
hipError_t hipDeviceGet(int *d, int ordinal) {
	if (ordinal != 0) return 101;
	*d = HIPDEV;
	return 0;
}
hipError_t hipDeviceGetName(char *name, int len, int dev) {
	if (dev != HIPDEV || len < 32) return 101;
	strcpy(name, "Fake AMD Instinct");
	return 0;
}
hipError_t hipDeviceTotalMem(size_t *b, int dev) { *b = (size_t)64 << 30; return dev == HIPDEV ? 0 : 101; }
hipError_t hipDeviceGetAttribute(int *v, int attr, int ordinal) {
	if (ordinal != 0) return 101;
	switch (attr) {
	case 23: *v = 9; return 0;      // compute capability major
	case 61: *v = 0; return 0;      // minor
	case 63: *v = 104; return 0;    // compute units
	case 87: *v = 64; return 0;     // warp size
	case 56: *v = 1024; return 0;   // max threads per block
	case 74: *v = 65536; return 0;  // LDS per block
	case 26: case 27: case 28: *v = 1024; return 0;
	case 29: case 30: case 31: *v = 2147483647; return 0;
	case 19: *v = 8 << 20; return 0;
	case 67: *v = 0x2a; return 0;
	case 68: *v = 0; return 0;
	case 69: *v = 0; return 0;
	}
	return 1;
}
// The R0600 layout puts gcnArchName at byte 1160 (approximately; the runtime does not rely on it).
hipError_t hipGetDevicePropertiesR0600(void *props, int ordinal) {
	if (ordinal != 0) return 101;
	memset(props, 0, 1472);
	strcpy(props, "Fake AMD Instinct");
	((unsigned char *)props)[300] = 'g';  // stray bytes of other fields
	strcpy((char *)props + 1160, "gfx90a:sramecc+:xnack-");
	return 0;
}
hipError_t hipSetDevice(int ordinal) {
	if (ordinal != 0) return 101;
	current = ordinal;
	return 0;
}
#define NEED_DEV() do { if (current != 0) return 709; } while (0)
hipError_t hipDeviceSynchronize(void) { NEED_DEV(); return 0; }

typedef struct { char *image; } module;
typedef struct { char name[64]; } function;
hipError_t hipModuleLoadData(void **mod, const void *image) {
	NEED_DEV();
	if (memcmp(image, "\x7f" "ELFFAKE", 8) != 0) return 200;  // hipErrorInvalidImage
	module *m = malloc(sizeof *m);
	m->image = strdup((const char *)image + 8);
	*mod = m;
	return 0;
}
hipError_t hipModuleUnload(void *mod) { module *m = mod; free(m->image); free(m); return 0; }
hipError_t hipModuleGetFunction(void **fn, void *mod, const char *name) {
	NEED_DEV();
	char decl[96];
	snprintf(decl, sizeof decl, "void %s(", name);
	if (strlen(name) >= 64 || !strstr(((module *)mod)->image, decl)) return 500;
	function *f = calloc(1, sizeof *f);
	strcpy(f->name, name);
	*fn = f;
	return 0;
}
hipError_t hipFuncGetAttribute(int *v, int attr, void *fn) {
	switch (attr) {
	case 0: *v = 1024; return 0;
	case 1: *v = 0; return 0;
	case 4: *v = 24; return 0;
	}
	return 1;
}
hipError_t hipMalloc(void **p, size_t n) {
	NEED_DEV();
	*p = malloc(n);
	memset(*p, 0xAB, n);
	live_allocs++;
	return 0;
}
hipError_t hipFree(void *p) { NEED_DEV(); free(p); live_allocs--; return 0; }
hipError_t hipMemset(void *p, int v, size_t n) { NEED_DEV(); memset(p, v, n); return 0; }
hipError_t hipMemcpyHtoD(void *dst, const void *src, size_t n) { NEED_DEV(); memcpy(dst, src, n); return 0; }
hipError_t hipMemcpyDtoH(void *dst, const void *src, size_t n) { NEED_DEV(); memcpy(dst, src, n); return 0; }
hipError_t hipStreamCreateWithFlags(void **s, unsigned flags) { NEED_DEV(); *s = STREAM; return flags == 0 ? 0 : 1; }
hipError_t hipStreamDestroy(void *s) { return s == STREAM ? 0 : 400; }
hipError_t hipStreamSynchronize(void *s) { NEED_DEV(); syncs++; return s == STREAM ? 0 : 400; }
hipError_t hipModuleLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 unsigned shared, void *stream, void **params, void **extra) {
	NEED_DEV();
	function *f = fn;
	if (stream != STREAM || extra != NULL || shared != 0) return 1;
	if (strcmp(f->name, "saxpy") != 0) return 719;
	float *y = *(float **)params[0];
	const float *x = *(const float **)params[1];
	float a = *(float *)params[2];
	unsigned n = *(unsigned *)params[3];
	unsigned long long threads = (unsigned long long)gx * gy * gz * bx * by * bz;
	for (unsigned long long i = 0; i < threads && i < n; i++) {
		float p = a * x[i];
		y[i] = p + y[i];
	}
	return 0;
}
typedef struct { double t; } event;
static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
hipError_t hipEventCreateWithFlags(void **e, unsigned flags) { NEED_DEV(); *e = calloc(1, sizeof(event)); return flags == 0 ? 0 : 1; }
hipError_t hipEventDestroy(void *e) { free(e); return 0; }
hipError_t hipEventRecord(void *e, void *s) { NEED_DEV(); ((event *)e)->t = now(); return s == STREAM ? 0 : 400; }
hipError_t hipEventSynchronize(void *e) { syncs++; return 0; }
hipError_t hipEventElapsedTime(float *ms, void *a, void *b) {
	*ms = (float)((((event *)b)->t - ((event *)a)->t) * 1e3) + 0.001f;
	return 0;
}

// HIPRTC.
typedef struct { char *src; char *log; } program;
int hiprtcVersion(int *major, int *minor) { *major = 6; *minor = 4; return 0; }
int hiprtcCreateProgram(void **prog, const char *src, const char *name, int nh, const char **h, const char **hn) {
	if (!src || !name || nh != 0) return 3;
	program *p = calloc(1, sizeof *p);
	p->src = strdup(src);
	p->log = strdup("");
	*prog = p;
	return 0;
}
int hiprtcDestroyProgram(void **prog) {
	program *p = *prog;
	free(p->src);
	free(p->log);
	free(p);
	*prog = NULL;
	return 0;
}
int hiprtcCompileProgram(void *prog, int n, const char **opts) {
	program *p = prog;
	int contract = 0, arch = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(opts[i], "-ffp-contract=off") == 0) contract = 1;
		if (strcmp(opts[i], "--offload-arch=gfx90a:sramecc+:xnack-") == 0) arch = 1;
	}
	free(p->log);
	if (!contract || !arch) {
		p->log = strdup("fake hiprtc: want --offload-arch=gfx90a:sramecc+:xnack- and -ffp-contract=off\n");
		return 5;
	}
	p->log = strdup("");
	return 0;
}
int hiprtcGetProgramLogSize(void *prog, size_t *n) { *n = strlen(((program *)prog)->log) + 1; return 0; }
int hiprtcGetProgramLog(void *prog, char *log) { strcpy(log, ((program *)prog)->log); return 0; }
int hiprtcGetCodeSize(void *prog, size_t *n) { *n = 8 + strlen(((program *)prog)->src) + 1; return 0; }
int hiprtcGetCode(void *prog, char *out) {
	memcpy(out, "\x7f" "ELFFAKE", 8);
	strcpy(out + 8, ((program *)prog)->src);
	return 0;
}
