package native

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/onesource-go/onesource/internal/dynlib"
)

// The words of a dispatch, as os_run reads them (a []uint64 in Go memory, alive and in place for
// the whole dispatch):
//
//	0       the ABI version (abiVersion)
//	1       the number of buffers, nb
//	2, 3, 4 the workgroup counts x, y, z
//	5, 6, 7 addresses of the control words: the next workgroup to take (u64), the first
//	        workgroup that failed (u64, all ones while none has), the cancel flag (u32)
//	8       the address of the parameters (u32 each)
//	9+2i    buffer i's address, 10+2i its element count
//
// then the control words and the parameters themselves. Each worker has its own report of
// reportWords u64 (0: 1 when an out-of-bounds access was made, then its site, index, element
// count, invocation and workgroup) and its frame (os_frame_size bytes, 64-byte aligned).

const (
	abiVersion  = 1
	reportWords = 8
)

func (p *Program) run(ctx context.Context, bufs [][]byte, params []uint32, groups [3]uint32) error {
	k := p.k
	if len(bufs) != len(k.Buffers) {
		return fmt.Errorf("native: kernel %s: %d buffers given, the kernel has %d", k.Name, len(bufs), len(k.Buffers))
	}
	if len(params) != len(k.Params) {
		return fmt.Errorf("native: kernel %s: %d parameters given, the kernel has %d", k.Name, len(params), len(k.Params))
	}
	if groups[0] == 0 || groups[1] == 0 || groups[2] == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	nb := len(bufs)
	ctl := 9 + 2*nb
	words := make([]uint64, ctl+3+(len(params)+2)/2) // the parameters, and room for one when there are none
	words[0], words[1] = abiVersion, uint64(nb)
	for i, g := range groups {
		words[2+i] = uint64(g)
	}
	words[ctl+1] = math.MaxUint64 // no workgroup failed
	words[5] = uint64(uintptr(unsafe.Pointer(&words[ctl])))
	words[6] = uint64(uintptr(unsafe.Pointer(&words[ctl+1])))
	words[7] = uint64(uintptr(unsafe.Pointer(&words[ctl+2])))
	ps := unsafe.Slice((*uint32)(unsafe.Pointer(&words[ctl+3])), len(params)+1)
	copy(ps, params)
	words[8] = uint64(uintptr(unsafe.Pointer(&ps[0])))
	// keep holds every buffer's first byte as a pointer in memory the collector scans: the buffers
	// stay alive (and in the heap) while C holds their addresses as plain words.
	keep := make([]unsafe.Pointer, nb)
	orig := bufs
	var copied []int
	for i, b := range bufs {
		kb := k.Buffers[i]
		if len(b) > math.MaxInt32 {
			return fmt.Errorf("native: kernel %s: buffer %s holds %d bytes; a binding holds at most 2^31-1", k.Name, kb.Name, len(b))
		}
		if len(b) == 0 {
			continue
		}
		if p.atomic[i] && uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
			// Atomics need aligned words: run on an aligned copy.
			w := make([]uint32, (len(b)+3)/4)
			a := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(b))
			copy(a, b)
			if copied == nil {
				bufs = append([][]byte(nil), bufs...)
			}
			bufs[i] = a
			b = a
			copied = append(copied, i)
		}
		keep[i] = unsafe.Pointer(&b[0])
		words[9+2*i] = uint64(uintptr(keep[i]))
		words[10+2*i] = uint64(len(b) / kb.Elem.Stride())
	}
	total := uint64(groups[0]) * uint64(groups[1]) * uint64(groups[2])
	workers := p.Workers()
	if uint64(workers) > total {
		workers = int(total)
	}
	workers = max(workers, 1)
	reports := make([]uint64, reportWords*workers)
	frames := make([][]byte, workers)
	stop := context.AfterFunc(ctx, func() {
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&words[ctl+2])), 1)
	})
	work := func(w int) {
		frames[w] = make([]byte, p.lib.frameSize+64)
		f := unsafe.Pointer(&frames[w][0])
		f = unsafe.Add(f, (64-uintptr(f)%64)%64)
		dynlib.Call(p.lib.run, uintptr(unsafe.Pointer(&words[0])), uintptr(unsafe.Pointer(&reports[reportWords*w])), uintptr(f))
	}
	if workers == 1 {
		work(0)
	} else {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work(w)
			}()
		}
		wg.Wait()
	}
	stopped := !stop()
	runtime.KeepAlive(keep)
	runtime.KeepAlive(words)
	runtime.KeepAlive(bufs)
	for _, i := range copied {
		copy(orig[i], bufs[i])
	}
	var first *OutOfBoundsError
	firstG := uint64(math.MaxUint64)
	for w := 0; w < workers; w++ {
		r := reports[reportWords*w : reportWords*(w+1)]
		if r[0] == 0 || r[5] >= firstG {
			continue
		}
		firstG = r[5]
		s := site{op: "access", array: "?"}
		if int(r[1]) < len(p.sites) {
			s = p.sites[r[1]]
		}
		g := r[5]
		first = &OutOfBoundsError{Kernel: k.Name, Pos: s.pos, Op: s.op, Array: s.array, Shared: s.shared,
			Index: int64(r[2]), Len: int(r[3]), Invocation: int(r[4]),
			Workgroup: [3]uint32{uint32(g % uint64(groups[0])), uint32(g / uint64(groups[0]) % uint64(groups[1])), uint32(g / (uint64(groups[0]) * uint64(groups[1])))}}
	}
	if first != nil {
		return first
	}
	if stopped && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}
