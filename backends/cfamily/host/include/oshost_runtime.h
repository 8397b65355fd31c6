// oshost_runtime.h: the host-execution (level H) runtime of onesource.
//
// This is EMULATION ON THE CPU, not a GPU run. Every lane (CUDA thread, HIP thread, Metal
// thread) of a workgroup is a user-mode fiber on one OS thread; the lanes of a workgroup run
// round-robin, each until its next barrier or subgroup exchange, and workgroups run one after
// another. Being single-threaded, a plain read-modify-write is atomic.
//
//   barrier   every lane of the workgroup has arrived before any leaves; a lane that returned
//             while others wait at a barrier is a deadlock and is reported as an error
//   shuffle   a subgroup-wide exchange point: every lane of the subgroup provides its value
//             before any lane reads one (lockstep semantics); reading a lane outside the
//             subgroup is reported as an error
//   memory    buffers sit between inaccessible guard pages, so most out-of-bounds accesses
//             stop the run with a message naming the buffer
//
// The generated harness (package host, harness.go) includes a dialect header
// (oshost_cuda.h or oshost_msl.h, which include this file), then the emitted kernel text, then
// a main that calls oshost::run_main. The data protocol on stdin/stdout is described at
// run_main; package host writes and reads it.
#ifndef ONESOURCE_HOST_RUNTIME_H
#define ONESOURCE_HOST_RUNTIME_H

#define ONESOURCE_HOST 1

#if defined(__APPLE__)
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700  // ucontext on macOS
#endif
#ifndef _DARWIN_C_SOURCE
#define _DARWIN_C_SOURCE 1  // MAP_ANONYMOUS, sigaltstack with _XOPEN_SOURCE
#endif
#endif

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <time.h>
#include <signal.h>
#include <errno.h>
#include <unistd.h>
#include <sys/mman.h>

#if !(defined(__x86_64__) && defined(__ELF__)) || defined(OSHOST_UCONTEXT)
#define OSHOST_USE_UCONTEXT 1
#include <ucontext.h>
#endif

// The C math functions kernels call, declared as <math.h> declares them (so that header may
// still be included) without including it: in C++ it costs most of a build. g++ and clang++
// expand the simple ones inline (sqrtss, roundss, ...; -fno-math-errno).
extern "C" {
#define OSHOST_MATH(T, name) T name(T) noexcept;
#define OSHOST_MATH2(T, name) T name(T, T) noexcept;
OSHOST_MATH(float, sqrtf) OSHOST_MATH(double, sqrt) OSHOST_MATH(float, floorf) OSHOST_MATH(double, floor)
OSHOST_MATH(float, ceilf) OSHOST_MATH(double, ceil) OSHOST_MATH(float, truncf) OSHOST_MATH(double, trunc)
OSHOST_MATH(float, roundf) OSHOST_MATH(double, round) OSHOST_MATH(float, rintf) OSHOST_MATH(double, rint)
OSHOST_MATH(float, fabsf) OSHOST_MATH(double, fabs) OSHOST_MATH(float, expf) OSHOST_MATH(double, exp)
OSHOST_MATH(float, exp2f) OSHOST_MATH(double, exp2) OSHOST_MATH(float, logf) OSHOST_MATH(double, log)
OSHOST_MATH(float, log2f) OSHOST_MATH(double, log2) OSHOST_MATH(float, sinf) OSHOST_MATH(double, sin)
OSHOST_MATH(float, cosf) OSHOST_MATH(double, cos) OSHOST_MATH(float, tanf) OSHOST_MATH(double, tan)
OSHOST_MATH(float, tanhf) OSHOST_MATH(double, tanh)
OSHOST_MATH2(float, fminf) OSHOST_MATH2(double, fmin) OSHOST_MATH2(float, fmaxf) OSHOST_MATH2(double, fmax)
OSHOST_MATH2(float, powf) OSHOST_MATH2(double, pow) OSHOST_MATH2(float, fmodf) OSHOST_MATH2(double, fmod)
float fmaf(float, float, float) noexcept;
double fma(double, double, double) noexcept;
#undef OSHOST_MATH
#undef OSHOST_MATH2
}

namespace oshost {

// u3 is a 3-component unsigned id (CUDA's uint3/dim3 layout).
struct u3 {
  unsigned int x, y, z;
};

enum : unsigned char { RUN = 0, AT_BARRIER, AT_EXCHANGE, AT_WARPSYNC, DONE, NSTATES };

// Lane is one invocation's fiber and its exchange slot.
struct Lane {
  void* sp;           // saved stack pointer (x86-64 fibers)
  u3 tid;             // local id
  unsigned int idx;   // flattened local index
  unsigned int sg;    // subgroup index in the workgroup
  unsigned int sgl;   // lane index in the subgroup
  unsigned char state;
  unsigned int xsize;  // bytes of the value this lane offers at an exchange
  unsigned int xsrc;   // subgroup lane it reads
  const char* xwhat;   // name of the exchange (for messages)
  alignas(16) unsigned char xval[32];
  alignas(16) unsigned char xres[32];
#ifdef OSHOST_USE_UCONTEXT
  ucontext_t ctx;
#endif
};

// Env is the state of one run: the dispatch, the buffers and the lanes.
struct Env {
  unsigned int nbufs, nparams;
  void** bufs;
  uint64_t* sizes;
  unsigned char** regions;  // mmap'ed region of each buffer (guard page first)
  uint64_t* region_len;
  uint32_t* params;
  u3 grid, wgdim, block;
  unsigned int warp, nlanes, nsg;
  unsigned int order, seed;
  Lane* lanes;
  unsigned int* perm;  // the order of the current round
  int pos;             // position in perm of the running lane
  unsigned int cnt[NSTATES];  // lanes of the workgroup per state (RUN not kept)
  unsigned int* sgcnt;        // lanes per subgroup and state: sgcnt[sg * NSTATES + state]
  unsigned char* stacks;
  size_t stack_bytes, stack_stride, stacks_len;
  void* sched_sp;
#ifdef OSHOST_USE_UCONTEXT
  ucontext_t sched_ctx;
#endif
  void (*entry)(void);
  const char* kernel;
};

inline Env g;
inline Lane* cur;

[[noreturn]] inline void fail(const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "host execution (H) of %s: %s\n", g.kernel ? g.kernel : "kernel", buf);
  fflush(stderr);
  _exit(2);
}

// ---- fibers -------------------------------------------------------------------------------
//
// A round of the scheduler runs every runnable lane once, in g.perm order: the scheduler
// switches to the first, and a lane that blocks switches straight to the next runnable one (the
// last one back to the scheduler), so a round costs one switch per lane. The switch returns with
// pop + jmp rather than ret: a ret to another fiber's address would always be mispredicted.

#ifndef OSHOST_USE_UCONTEXT
extern "C" void oshost_swap(void** save, void* to);
asm(R"(
	.text
	.globl oshost_swap
	.type oshost_swap,@function
	.p2align 4
oshost_swap:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	popq %rcx
	jmp *%rcx
	.size oshost_swap,.-oshost_swap
)");
#endif

[[noreturn]] inline void fiber_main(void);

// start prepares lane l to begin the kernel at its next resume.
inline void start(Lane* l) {
  unsigned char* top = g.stacks + (size_t)(l - g.lanes) * g.stack_stride + g.stack_stride;
#ifndef OSHOST_USE_UCONTEXT
  void** sp = (void**)((uintptr_t)top & ~(uintptr_t)15);
  sp -= 8;                     // 6 saved registers, the resume address, a null return address
  for (int i = 0; i < 6; i++) sp[i] = 0;
  sp[6] = (void*)&fiber_main;  // entered with rsp = 8 mod 16, as after a call
  sp[7] = 0;
  l->sp = sp;
#else
  getcontext(&l->ctx);
  l->ctx.uc_stack.ss_sp = top - g.stack_bytes;
  l->ctx.uc_stack.ss_size = g.stack_bytes;
  l->ctx.uc_link = 0;
  makecontext(&l->ctx, (void (*)(void))fiber_main, 0);
#endif
  l->state = RUN;
}

// switch_to saves the running context (lane from, or the scheduler when null) and resumes lane
// to (or the scheduler when null).
__attribute__((always_inline)) inline void switch_to(Lane* from, Lane* to) {
  if (to) cur = to;
#ifndef OSHOST_USE_UCONTEXT
  oshost_swap(from ? &from->sp : &g.sched_sp, to ? to->sp : g.sched_sp);
#else
  swapcontext(from ? &from->ctx : &g.sched_ctx, to ? &to->ctx : &g.sched_ctx);
#endif
}

// next_runnable advances the round to the next runnable lane, or returns null at its end.
__attribute__((noinline)) inline Lane* next_runnable() {
  const int L = (int)g.nlanes;
  while (++g.pos < L) {
    Lane* l = &g.lanes[g.perm[g.pos]];
    if (l->state == RUN) return l;
  }
  return 0;
}

// block stops the current lane in state s and continues the round.
__attribute__((always_inline)) inline void block(unsigned char s) {
  Lane* l = cur;
  l->state = s;
  g.cnt[s]++;
  g.sgcnt[l->sg * NSTATES + s]++;
  switch_to(l, next_runnable());
}

[[noreturn]] inline void fiber_main(void) {
  g.entry();
  for (;;) block(DONE);
}

// ---- synchronization points used by the dialect headers ------------------------------------

// barrier is a workgroup barrier (__syncthreads, threadgroup_barrier).
inline void barrier() { block(AT_BARRIER); }

// warpsync is a subgroup barrier (__syncwarp, simdgroup_barrier).
inline void warpsync() { block(AT_WARPSYNC); }

inline unsigned int sg_size(unsigned int sg) {
  unsigned int base = sg * g.warp;
  unsigned int n = g.nlanes - base;
  return n < g.warp ? n : g.warp;
}

// exchange offers v and returns the value lane src (of this subgroup) offered at the same
// exchange: every lane of the subgroup arrives before any lane reads (lockstep).
template <class T>
inline T exchange(T v, unsigned int src, const char* what) {
  static_assert(sizeof(T) <= sizeof(((Lane*)0)->xval), "exchanged value too large");
  Lane* l = cur;
  unsigned int n = sg_size(l->sg);
  if (src >= n)
    fail("%s: lane %u of subgroup %u reads lane %u, outside the %u-lane subgroup (workgroup (%u,%u,%u), "
         "subgroup size %u)",
         what, l->sgl, l->sg, src, n, g.block.x, g.block.y, g.block.z, g.warp);
  memcpy(l->xval, &v, sizeof(T));
  l->xsize = sizeof(T);
  l->xsrc = src;
  l->xwhat = what;
  block(AT_EXCHANGE);
  T r;
  memcpy(&r, cur->xres, sizeof(T));
  return r;
}

// gather offers v at a subgroup-wide exchange and copies the value every lane of the subgroup
// offered into all[0..n), n the subgroup's lane count (returned): the matrix instructions of the
// islands read all their operands' fragments at once. No lane leaves until every lane has read
// (a subgroup barrier), so no lane's next exchange overwrites a value another still reads.
template <class T>
inline unsigned int gather(const T& v, T* all, const char* what) {
  static_assert(sizeof(T) <= sizeof(((Lane*)0)->xval), "gathered value too large");
  Lane* l = cur;
  memcpy(l->xval, &v, sizeof(T));
  l->xsize = sizeof(T);
  l->xsrc = l->sgl;
  l->xwhat = what;
  block(AT_EXCHANGE);
  unsigned int n = sg_size(cur->sg), base = cur->sg * g.warp;
  for (unsigned int i = 0; i < n; i++) memcpy(&all[i], g.lanes[base + i].xval, sizeof(T));
  warpsync();
  return n;
}

template <class T>
inline T shuffle_xor(T v, unsigned int mask, unsigned int width, const char* what) {
  Lane* l = cur;
  if (width == 0 || (width & (width - 1)) != 0 || width > g.warp)
    fail("%s: width %u is not a power of two no larger than the subgroup size %u", what, width, g.warp);
  unsigned int src = l->sgl ^ mask;
  if ((src & ~(width - 1)) != (l->sgl & ~(width - 1)))
    fail("%s: lane %u reads lane %u (xor %u), outside its %u-lane segment", what, l->sgl, src, mask, width);
  return exchange(v, src, what);
}

template <class T>
inline T shuffle_idx(T v, unsigned int src, const char* what) {
  return exchange(v, src, what);
}

// shuffle_down/up follow CUDA: a source outside the segment yields the lane's own value.
template <class T>
inline T shuffle_down(T v, unsigned int delta, unsigned int width, const char* what) {
  Lane* l = cur;
  unsigned int seg = l->sgl & ~(width - 1);
  unsigned int src = l->sgl + delta;
  if (src >= seg + width || src >= sg_size(l->sg)) src = l->sgl;
  return exchange(v, src, what);
}

template <class T>
inline T shuffle_up(T v, unsigned int delta, unsigned int width, const char* what) {
  Lane* l = cur;
  unsigned int seg = l->sgl & ~(width - 1);
  unsigned int src = l->sgl - delta;
  if (l->sgl < seg + delta) src = l->sgl;
  return exchange(v, src, what);
}

inline u3 gid() {
  return u3{g.block.x * g.wgdim.x + cur->tid.x, g.block.y * g.wgdim.y + cur->tid.y,
            g.block.z * g.wgdim.z + cur->tid.z};
}

// ---- packed integer dot products (non-saturating unless clamp is asked for) ----------------

inline int32_t byte_of(uint32_t w, int i, bool sgn) {
  uint32_t b = (w >> (8 * i)) & 0xffu;
  return sgn ? (int32_t)(int8_t)(uint8_t)b : (int32_t)b;
}

inline int64_t dot4_wide(uint32_t a, bool as, uint32_t b, bool bs) {
  int64_t s = 0;
  for (int i = 0; i < 4; i++) s += (int64_t)byte_of(a, i, as) * byte_of(b, i, bs);
  return s;
}

// dot4 returns c + sum of the four byte products, wrapping to 32 bits.
inline uint32_t dot4(uint32_t a, bool as, uint32_t b, bool bs, uint32_t c) {
  return (uint32_t)((uint64_t)(uint32_t)(int32_t)dot4_wide(a, as, b, bs) + c);
}

// dot4_sat is the clamped (saturating) signed form.
inline int32_t dot4_sat(uint32_t a, bool as, uint32_t b, bool bs, int32_t c) {
  int64_t s = dot4_wide(a, as, b, bs) + c;
  if (s > INT32_MAX) return INT32_MAX;
  if (s < INT32_MIN) return INT32_MIN;
  return (int32_t)s;
}

template <class To, class From>
inline To bitcast(const From& f) {
  static_assert(sizeof(To) == sizeof(From), "bit cast between types of different sizes");
  To t;
  memcpy(&t, &f, sizeof t);
  return t;
}

// ---- arguments the harness passes (conversions to whatever the kernel declares) -----------

struct AnyPtr {
  void* p;
  template <class T>
  operator T*() const { return (T*)p; }
};

struct AnyRef {
  void* p;
  template <class T>
  operator T&() const { return *(T*)p; }
};

struct AnyVal {
  uint32_t bits;
  operator float() const { return bitcast<float>(bits); }
  operator int() const { return (int)bits; }
  operator unsigned int() const { return bits; }
  operator bool() const { return bits != 0; }
};

// ---- scheduling ---------------------------------------------------------------------------

static const char* const state_names[] = {"running", "waiting at a workgroup barrier",
                                          "waiting at a subgroup exchange", "waiting at a subgroup barrier",
                                          "returned"};

inline unsigned int rng_next() {
  unsigned int x = g.seed;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  g.seed = x ? x : 0x9e3779b9u;
  return g.seed;
}

inline void describe(char* out, size_t cap, unsigned int lo, unsigned int hi) {
  // Lanes lo..hi-1 grouped into runs of equal state.
  size_t n = 0;
  out[0] = 0;
  unsigned int i = lo;
  while (i < hi && n + 96 < cap) {
    unsigned int j = i;
    while (j + 1 < hi && g.lanes[j + 1].state == g.lanes[i].state) j++;
    const char* extra = g.lanes[i].state == AT_EXCHANGE && g.lanes[i].xwhat ? g.lanes[i].xwhat : 0;
    if (i == j)
      n += snprintf(out + n, cap - n, "%slane %u %s%s%s%s", n ? "; " : "", i, state_names[g.lanes[i].state],
                    extra ? " (" : "", extra ? extra : "", extra ? ")" : "");
    else
      n += snprintf(out + n, cap - n, "%slanes %u-%u %s%s%s%s", n ? "; " : "", i, j,
                    state_names[g.lanes[i].state], extra ? " (" : "", extra ? extra : "", extra ? ")" : "");
    i = j + 1;
  }
  if (i < hi) snprintf(out + n, cap - n, "; ...");
}

[[noreturn]] inline void deadlock(const char* why) {
  static char desc[3000];
  describe(desc, sizeof desc, 0, g.nlanes);
  fail("deadlock in workgroup (%u,%u,%u): %s; %s", g.block.x, g.block.y, g.block.z, why, desc);
}

inline void run_workgroup() {
  const unsigned int L = g.nlanes;
  for (unsigned int i = 0; i < L; i++) {
    start(&g.lanes[i]);
    g.perm[i] = g.order == 1 ? L - 1 - i : i;
  }
  memset(g.cnt, 0, sizeof g.cnt);
  memset(g.sgcnt, 0, (size_t)g.nsg * NSTATES * sizeof(unsigned int));
  for (;;) {
    // Run every runnable lane until it blocks.
    if (g.order == 2) {
      for (unsigned int i = L; i > 1; i--) {
        unsigned int j = rng_next() % i;
        unsigned int t = g.perm[i - 1];
        g.perm[i - 1] = g.perm[j];
        g.perm[j] = t;
      }
    }
    g.pos = -1;
    if (Lane* first = next_runnable()) switch_to(0, first);
    // Release what can proceed: complete subgroup exchanges and subgroup barriers first.
    bool progress = false;
    if (g.cnt[AT_EXCHANGE] + g.cnt[AT_WARPSYNC] > 0) {
      for (unsigned int s = 0; s < g.nsg; s++) {
        unsigned int base = s * g.warp, n = sg_size(s);
        unsigned int* c = &g.sgcnt[s * NSTATES];
        if (c[AT_EXCHANGE] == n) {
          unsigned int size = g.lanes[base].xsize;
          for (unsigned int i = base; i < base + n; i++) {
            if (g.lanes[i].xsize != size || strcmp(g.lanes[i].xwhat, g.lanes[base].xwhat) != 0)
              fail("subgroup %u of workgroup (%u,%u,%u): lanes %u and %u meet at different exchanges (%s of %u "
                   "bytes, %s of %u bytes)",
                   s, g.block.x, g.block.y, g.block.z, base, i, g.lanes[base].xwhat, size, g.lanes[i].xwhat,
                   g.lanes[i].xsize);
          }
          for (unsigned int i = base; i < base + n; i++) {
            Lane* l = &g.lanes[i];
            memcpy(l->xres, g.lanes[base + l->xsrc].xval, size);
            l->state = RUN;
          }
          c[AT_EXCHANGE] = 0;
          g.cnt[AT_EXCHANGE] -= n;
          progress = true;
        } else if (c[AT_WARPSYNC] == n) {
          for (unsigned int i = base; i < base + n; i++) g.lanes[i].state = RUN;
          c[AT_WARPSYNC] = 0;
          g.cnt[AT_WARPSYNC] -= n;
          progress = true;
        }
      }
    }
    if (progress) continue;
    const unsigned int done = g.cnt[DONE], atbar = g.cnt[AT_BARRIER];
    if (done == L) return;
    if (atbar + done == L) {
      if (done > 0) deadlock("a workgroup barrier is waited at by lanes while others have returned");
      for (unsigned int i = 0; i < L; i++) g.lanes[i].state = RUN;
      g.cnt[AT_BARRIER] = 0;
      continue;
    }
    deadlock("no lane can proceed");
  }
}

// ---- memory -------------------------------------------------------------------------------

inline size_t page_size() {
  static size_t p = 0;
  if (!p) p = (size_t)sysconf(_SC_PAGESIZE);
  return p;
}

// alloc_buffer maps size bytes, 16-byte aligned, ending as close to a trailing guard page as
// the alignment allows, with a guard page before it too. An empty buffer still gets 16 bytes:
// a checked kernel (lower.Checked) reads element 0 of a buffer in place of an out-of-bounds
// element.
inline void alloc_buffer(unsigned int k, uint64_t size) {
  size_t ps = page_size();
  uint64_t rounded = size == 0 ? 16 : (size + 15) & ~(uint64_t)15;
  uint64_t data = (rounded + ps - 1) / ps * ps;
  uint64_t len = data + 2 * ps;
  void* m = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) fail("cannot map %llu bytes for buffer %u", (unsigned long long)len, k);
  unsigned char* r = (unsigned char*)m;
  mprotect(r, ps, PROT_NONE);
  mprotect(r + ps + data, ps, PROT_NONE);
  g.regions[k] = r;
  g.region_len[k] = len;
  g.bufs[k] = r + ps + data - rounded;
  g.sizes[k] = size;
}

inline void alloc_lanes() {
  size_t ps = page_size();
  size_t stack = (g.stack_bytes + ps - 1) / ps * ps;
  g.stack_stride = stack + ps;
  g.stacks_len = (size_t)g.nlanes * g.stack_stride;
  void* m = mmap(0, g.stacks_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) fail("cannot map %zu bytes of fiber stacks", g.stacks_len);
  g.stacks = (unsigned char*)m;
  for (unsigned int i = 0; i < g.nlanes; i++) mprotect(g.stacks + (size_t)i * g.stack_stride, ps, PROT_NONE);
  g.lanes = (Lane*)calloc(g.nlanes, sizeof(Lane));
  g.perm = (unsigned int*)calloc(g.nlanes, sizeof(unsigned int));
  g.sgcnt = (unsigned int*)calloc((size_t)g.nsg * NSTATES, sizeof(unsigned int));
  if (!g.lanes || !g.perm || !g.sgcnt) fail("out of memory for %u lanes", g.nlanes);
  unsigned int i = 0;
  for (unsigned int z = 0; z < g.wgdim.z; z++)
    for (unsigned int y = 0; y < g.wgdim.y; y++)
      for (unsigned int x = 0; x < g.wgdim.x; x++, i++) {
        Lane* l = &g.lanes[i];
        l->tid = u3{x, y, z};
        l->idx = i;
        l->sg = i / g.warp;
        l->sgl = i % g.warp;
      }
}

// ---- faults -------------------------------------------------------------------------------

inline void on_fault(int sig, siginfo_t* si, void*) {
  char msg[1024];
  const char* what = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "signal";
  uintptr_t a = (uintptr_t)si->si_addr;
  char where[400];
  where[0] = 0;
  if (sig == SIGFPE) {
    snprintf(where, sizeof where, ": an arithmetic trap (integer division by zero or INT_MIN / -1, undefined in the IR)");
  } else {
    for (unsigned int k = 0; k < g.nbufs; k++) {
      uintptr_t r = (uintptr_t)g.regions[k], start = (uintptr_t)g.bufs[k];
      if (a >= r && a < r + g.region_len[k]) {
        if (a < start)
          snprintf(where, sizeof where, ": %llu bytes before the start of buffer %u (of %llu bytes)",
                   (unsigned long long)(start - a), k, (unsigned long long)g.sizes[k]);
        else
          snprintf(where, sizeof where, ": byte offset %llu of buffer %u, which holds %llu bytes (out of bounds)",
                   (unsigned long long)(a - start), k, (unsigned long long)g.sizes[k]);
      }
    }
    uintptr_t s = (uintptr_t)g.stacks;
    if (!where[0] && s && a >= s && a < s + g.stacks_len)
      snprintf(where, sizeof where, ": fiber stack overflow (lane %llu; raise Options.StackBytes)",
               (unsigned long long)((a - s) / g.stack_stride));
  }
  int n = snprintf(msg, sizeof msg,
                   "host execution (H) of %s: %s at address %p%s, in workgroup (%u,%u,%u) lane %u\n",
                   g.kernel ? g.kernel : "kernel", what, (void*)a, where, g.block.x, g.block.y, g.block.z,
                   cur ? cur->idx : 0);
  if (n > 0) {
    ssize_t w = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    (void)w;
  }
  _exit(3);
}

inline void install_fault_handlers() {
  static unsigned char altstack[1 << 16];
  stack_t ss;
  ss.ss_sp = altstack;
  ss.ss_size = sizeof altstack;
  ss.ss_flags = 0;
  sigaltstack(&ss, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, 0);
  sigaction(SIGBUS, &sa, 0);
  sigaction(SIGFPE, &sa, 0);
}

// ---- protocol -----------------------------------------------------------------------------

inline void read_full(void* p, size_t n) {
  unsigned char* b = (unsigned char*)p;
  while (n > 0) {
    ssize_t r = read(0, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail("short input on stdin (protocol error)");
    b += r;
    n -= (size_t)r;
  }
}

inline void write_full(const void* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  while (n > 0) {
    ssize_t r = write(1, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail("cannot write the results to stdout");
    b += r;
    n -= (size_t)r;
  }
}

inline uint32_t rd32() {
  unsigned char b[4];
  read_full(b, 4);
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

inline uint64_t rd64() {
  uint64_t lo = rd32();
  return lo | (uint64_t)rd32() << 32;
}

inline void wr64(uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  write_full(b, 8);
}

inline uint64_t now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// run_main runs the kernel. Input on stdin, little-endian:
//
//   u32 magic 0x3148534f ("OSH1"), u32 nbufs, u32 nparams,
//   u32 grid[3], u32 workgroup[3], u32 subgroup size, u32 repeat, u32 order, u32 seed,
//   u64 stack bytes per lane, u64 size[nbufs], the buffers' bytes in order, u32 params[nparams]
//
// Output on stdout: u32 magic, u64 nanoseconds spent in the repeat grid runs, u64 workgroups
// run, then every buffer's bytes in order (sizes as given). Errors: a message on stderr and exit
// status 2 (emulation: deadlock, bad exchange, protocol) or 3 (a fault inside the kernel).
inline int run_main(void (*entry)(void), const char* kernel, unsigned int nbufs, unsigned int nparams) {
  g.entry = entry;
  g.kernel = kernel;
  if (rd32() != 0x3148534fu) fail("bad input magic (protocol error)");
  unsigned int nb = rd32(), np = rd32();
  if (nb != nbufs || np != nparams)
    fail("the harness was built for %u buffers and %u parameters, given %u and %u", nbufs, nparams, nb, np);
  g.nbufs = nb;
  g.nparams = np;
  g.grid = u3{rd32(), rd32(), rd32()};
  g.wgdim = u3{rd32(), rd32(), rd32()};
  g.warp = rd32();
  unsigned int repeat = rd32();
  g.order = rd32();
  g.seed = rd32() | 1u;
  g.stack_bytes = (size_t)rd64();
  if (g.warp == 0 || g.warp > 1024) fail("subgroup size %u out of range", g.warp);
  uint64_t lanes = (uint64_t)g.wgdim.x * g.wgdim.y * g.wgdim.z;
  if (lanes == 0 || lanes > 65536) fail("workgroup (%u,%u,%u) has %llu lanes", g.wgdim.x, g.wgdim.y, g.wgdim.z,
                                        (unsigned long long)lanes);
  g.nlanes = (unsigned int)lanes;
  g.nsg = (g.nlanes + g.warp - 1) / g.warp;
  if (g.stack_bytes < 16384) g.stack_bytes = 16384;
  g.bufs = (void**)calloc(nb + 1, sizeof(void*));
  g.sizes = (uint64_t*)calloc(nb + 1, sizeof(uint64_t));
  g.regions = (unsigned char**)calloc(nb + 1, sizeof(void*));
  g.region_len = (uint64_t*)calloc(nb + 1, sizeof(uint64_t));
  g.params = (uint32_t*)calloc(np + 4, sizeof(uint32_t));
  for (unsigned int k = 0; k < nb; k++) g.sizes[k] = rd64();
  for (unsigned int k = 0; k < nb; k++) {
    uint64_t size = g.sizes[k];
    alloc_buffer(k, size);
    read_full(g.bufs[k], (size_t)size);
  }
  for (unsigned int k = 0; k < np; k++) g.params[k] = rd32();
  install_fault_handlers();
  alloc_lanes();
  uint64_t groups = 0;
  uint64_t t0 = now_ns();
  for (unsigned int r = 0; r < repeat; r++)
    for (unsigned int z = 0; z < g.grid.z; z++)
      for (unsigned int y = 0; y < g.grid.y; y++)
        for (unsigned int x = 0; x < g.grid.x; x++) {
          g.block = u3{x, y, z};
          run_workgroup();
          groups++;
        }
  uint64_t t1 = now_ns();
  unsigned char magic[4] = {0x4f, 0x53, 0x48, 0x31};
  write_full(magic, 4);
  wr64(t1 - t0);
  wr64(groups);
  for (unsigned int k = 0; k < nb; k++) write_full(g.bufs[k], (size_t)g.sizes[k]);
  return 0;
}

}  // namespace oshost

#endif  // ONESOURCE_HOST_RUNTIME_H
