// Package devrun is the host side of one dispatch, shared by every device runtime user (the
// conformance suite and package prebuilt, on Vulkan, CUDA and HIP): allocate a device buffer per
// binding, copy the host bytes in, launch, copy the results back, release.
package devrun

import (
	"fmt"
)

// Buffer is what every runtime's device buffer offers.
type Buffer interface {
	Write(offset int, data []byte) error
	Read(offset int, dst []byte) error
	Release()
}

// MinSize is the smallest buffer Once allocates: an empty binding still gets a buffer a device
// can bind.
const MinSize = 4

// Once allocates one buffer per host slice (at least MinSize bytes), copies the bytes in, calls
// launch with the buffers in binding order, copies buffer i back into host[i] for every i in
// readBack, and releases every buffer, also on error.
func Once[B Buffer](alloc func(size int) (B, error), host [][]byte, readBack []int, launch func(bufs []B) error) (err error) {
	bufs := make([]B, 0, len(host))
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	for i, data := range host {
		b, err := alloc(max(len(data), MinSize))
		if err != nil {
			return fmt.Errorf("binding %d: %w", i, err)
		}
		bufs = append(bufs, b)
		if err := b.Write(0, data); err != nil {
			return fmt.Errorf("binding %d: %w", i, err)
		}
	}
	if err := launch(bufs); err != nil {
		return err
	}
	for _, i := range readBack {
		if i < 0 || i >= len(bufs) {
			return fmt.Errorf("read back binding %d: there are %d bindings", i, len(bufs))
		}
		if err := bufs[i].Read(0, host[i]); err != nil {
			return fmt.Errorf("binding %d: %w", i, err)
		}
	}
	return nil
}
