package gpudrv

import "fmt"

// Buffer is a region of device memory (cuMemAlloc, hipMalloc). Write and Read copy synchronously
// between it and Go memory. A Buffer belongs to the Device that made it and is freed by Release
// or the device's Close.
type Buffer struct {
	dev      *Device
	ptr      uint64 // the device address
	size     int
	released bool
}

// ViewAlignment is what a View's offset must be a multiple of: the widest natural alignment a
// kernel's loads may need (16 bytes: float4, uint4, double2), so that no view makes a kernel
// fault on a misaligned address, which would leave the context unusable.
const ViewAlignment = 16

// View is a byte range of a Buffer, passed to a launch as a pointer to its first byte (the
// buffer's address plus Offset): the kernel sees the range as its whole buffer. Size 0 means to
// the end of the buffer. Offset must be a multiple of ViewAlignment.
type View struct {
	Buffer       *Buffer
	Offset, Size int
}

// Whole is a view of all of b.
func (b *Buffer) Whole() View { return View{Buffer: b} }

// Range is a view of size bytes of b from offset (checked when it is launched).
func (b *Buffer) Range(offset, size int) View { return View{Buffer: b, Offset: offset, Size: size} }

// NewBuffer allocates size bytes (at least 1) of device memory, zero-filled.
func (d *Device) NewBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, d.errorf("NewBuffer: size %d: must be positive", size)
	}
	leave, err := d.enter("NewBuffer")
	if err != nil {
		return nil, err
	}
	defer leave()
	p, err := d.drv.Alloc(size)
	if err != nil {
		return nil, d.wrap(fmt.Sprintf("NewBuffer(%d)", size), err)
	}
	if err := d.drv.Zero(p, size); err != nil {
		d.drv.Free(p)
		return nil, d.wrap(fmt.Sprintf("NewBuffer(%d)", size), err)
	}
	b := &Buffer{dev: d, ptr: p, size: size}
	d.buffers[b] = struct{}{}
	return b, nil
}

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int { return b.size }

// Pointer returns the buffer's device address; 0 once released.
func (b *Buffer) Pointer() uint64 { return b.ptr }

// checkRange validates [offset, offset+n) against the buffer.
func (b *Buffer) checkRange(op string, offset, n int) error {
	if b.released {
		return b.dev.errorf("Buffer.%s: buffer released", op)
	}
	if offset < 0 || n < 0 || offset > b.size || n > b.size-offset {
		return b.dev.errorf("Buffer.%s: range [%d, %d+%d) outside the buffer's %d bytes", op, offset, offset, n, b.size)
	}
	return nil
}

// Write copies data into the buffer at offset and returns when the copy is done, after the work
// submitted before it. The range must lie inside the buffer.
func (b *Buffer) Write(offset int, data []byte) error {
	d := b.dev
	leave, err := d.enter("Buffer.Write")
	if err != nil {
		return err
	}
	defer leave()
	if err := b.checkRange("Write", offset, len(data)); err != nil || len(data) == 0 {
		return err
	}
	if d.pending {
		if err := d.sync(); err != nil {
			return d.wrap("Buffer.Write", err)
		}
	}
	d.stats.HostWrites++
	if err := d.drv.CopyHtoD(b.ptr+uint64(offset), data); err != nil {
		return d.wrap("Buffer.Write", err)
	}
	return nil
}

// Read copies len(dst) bytes of the buffer from offset into dst, after the work submitted before
// it has finished. The range must lie inside the buffer.
func (b *Buffer) Read(offset int, dst []byte) error {
	d := b.dev
	leave, err := d.enter("Buffer.Read")
	if err != nil {
		return err
	}
	defer leave()
	if err := b.checkRange("Read", offset, len(dst)); err != nil || len(dst) == 0 {
		return err
	}
	if d.pending {
		if err := d.sync(); err != nil {
			return d.wrap("Buffer.Read", err)
		}
	}
	d.stats.HostReads++
	if err := d.drv.CopyDtoH(dst, b.ptr+uint64(offset)); err != nil {
		return d.wrap("Buffer.Read", err)
	}
	return nil
}

// Release frees the buffer. Releasing twice, or after the device was closed, is a no-op. A
// Stream that holds a view of it fails at Submit.
func (b *Buffer) Release() {
	d := b.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.released || d.closed {
		return
	}
	d.releaseLocked(func() { d.drv.Free(b.ptr) })
	b.ptr = 0
	b.released = true
	delete(d.buffers, b)
}
