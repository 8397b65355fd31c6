package dsl

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/onesource-go/onesource/ir"
)

// A zero Array (one never declared with Kernel.Buffer or Kernel.Shared) belongs to no kernel,
// so using it cannot record an error in the kernel being written the usual way. The mistake is
// recorded in the kernel of any Value passed along with it; when there is none (every argument
// a Go constant), it is kept here, and every kernel that was under construction at that moment
// (made by New before it, built after it) fails to Build with it. Kernels written one after the
// other get exactly their own mistakes; kernels written concurrently may each report another's.

var (
	kernelSeq atomic.Uint64 // New stamps each kernel; each orphan mistake is stamped too
	orphanMu  sync.Mutex
	orphans   []orphan
)

type orphan struct {
	seq uint64
	err error
}

// misuse records mistake msg at p, made with a zero Array: in the kernel of the first Value
// among args, else as an orphan for the kernels under construction.
func misuse(p ir.Pos, msg string, args ...any) {
	for _, a := range args {
		if v, ok := a.(Value); ok && v.k != nil {
			v.k.errorf(p, "%s", msg)
			return
		}
	}
	orphanMu.Lock()
	defer orphanMu.Unlock()
	if len(orphans) < 100 {
		orphans = append(orphans, orphan{seq: kernelSeq.Add(1), err: &Error{Pos: p, Msg: msg}})
	}
}

// orphanErrors returns the orphan mistakes made after a kernel stamped created.
func orphanErrors(created uint64) []error {
	orphanMu.Lock()
	defer orphanMu.Unlock()
	var out []error
	for _, o := range orphans {
		if o.seq > created {
			out = append(out, o.err)
		}
	}
	return out
}

func zeroArray(op string) string {
	return fmt.Sprintf("%s on an Array that was never declared (a zero dsl.Array): declare it with Kernel.Buffer or Kernel.Shared", op)
}
