package vulkan

import (
	"context"
	"fmt"
	"unsafe"
)

// Buffer is a storage buffer in host-visible, host-coherent memory (device-local too where the
// device has such memory), mapped for its whole life: Write and Read copy straight through the
// mapping. A Buffer belongs to the Device that made it and is released by Release or Close.
type Buffer struct {
	dev         *Device
	id          uint64 // unique on its device; keys the descriptor-set caches
	size        int
	handle      vkBuffer
	mem         vkDeviceMemory
	mapped      unsafe.Pointer
	deviceLocal bool
	released    bool
}

// NewBuffer creates a storage buffer of size bytes (at least 1, at most the device's
// MaxStorageBufferRange), zero-filled.
func (d *Device) NewBuffer(size int) (*Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked(context.Background()); err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fmt.Errorf("vulkan: NewBuffer: size %d: must be positive", size)
	}
	if uint64(size) > uint64(d.info.MaxStorageBufferRange) {
		return nil, fmt.Errorf("vulkan: NewBuffer: size %d exceeds the device's maxStorageBufferRange %d", size, d.info.MaxStorageBufferRange)
	}
	b := &Buffer{dev: d, size: size}
	if err := b.create(); err != nil {
		b.destroy()
		return nil, err
	}
	d.nextID++
	b.id = d.nextID
	d.buffers[b] = struct{}{}
	clear(unsafe.Slice((*byte)(b.mapped), b.size))
	return b, nil
}

func (b *Buffer) create() error {
	d := b.dev
	bci := &vkBufferCreateInfo{
		SType:       vkStructureTypeBufferCreateInfo,
		Size:        uint64(b.size),
		Usage:       vkBufferUsageStorageBufferBit | vkBufferUsageTransferSrcBit | vkBufferUsageTransferDstBit,
		SharingMode: vkSharingModeExclusive,
	}
	if err := check("vkCreateBuffer", d.fn.createBuffer(d.handle, unsafe.Pointer(bci), nil, unsafe.Pointer(&b.handle))); err != nil {
		return err
	}
	var req vkMemoryRequirements
	d.fn.getBufferMemoryRequirements(d.handle, b.handle, unsafe.Pointer(&req))
	typ, local, ok := d.pd.memoryType(req)
	if !ok {
		return fmt.Errorf("vulkan: NewBuffer: no host-visible, host-coherent memory type fits %d bytes (memoryTypeBits %#x)", req.Size, req.MemoryTypeBits)
	}
	b.deviceLocal = local
	mai := &vkMemoryAllocateInfo{
		SType:           vkStructureTypeMemoryAllocateInfo,
		AllocationSize:  req.Size,
		MemoryTypeIndex: typ,
	}
	if err := check("vkAllocateMemory", d.fn.allocateMemory(d.handle, unsafe.Pointer(mai), nil, unsafe.Pointer(&b.mem))); err != nil {
		return err
	}
	if err := check("vkBindBufferMemory", d.fn.bindBufferMemory(d.handle, b.handle, b.mem, 0)); err != nil {
		return err
	}
	return check("vkMapMemory", d.fn.mapMemory(d.handle, b.mem, 0, vkWholeSize, 0, unsafe.Pointer(&b.mapped)))
}

// memoryType picks the memory type for a buffer: host-visible and host-coherent, preferring
// device-local, among req.MemoryTypeBits and on a heap large enough.
func (pd *physDevice) memoryType(req vkMemoryRequirements) (index uint32, deviceLocal, ok bool) {
	const need = vkMemoryPropertyHostVisibleBit | vkMemoryPropertyHostCoherentBit
	best := -1
	for i := 0; i < int(pd.mem.MemoryTypeCount) && i < len(pd.mem.MemoryTypes); i++ {
		t := pd.mem.MemoryTypes[i]
		if req.MemoryTypeBits&(1<<i) == 0 || t.PropertyFlags&need != need {
			continue
		}
		if int(t.HeapIndex) < len(pd.mem.MemoryHeaps) && pd.mem.MemoryHeaps[t.HeapIndex].Size < req.Size {
			continue
		}
		if best < 0 || (t.PropertyFlags&vkMemoryPropertyDeviceLocalBit != 0 &&
			pd.mem.MemoryTypes[best].PropertyFlags&vkMemoryPropertyDeviceLocalBit == 0) {
			best = i
		}
	}
	if best < 0 {
		return 0, false, false
	}
	return uint32(best), pd.mem.MemoryTypes[best].PropertyFlags&vkMemoryPropertyDeviceLocalBit != 0, true
}

// destroy frees what exists. The device's mutex is held (or the buffer was never published).
func (b *Buffer) destroy() {
	d := b.dev
	if b.mapped != nil {
		d.fn.unmapMemory(d.handle, b.mem)
		b.mapped = nil
	}
	if b.handle != 0 {
		d.fn.destroyBuffer(d.handle, b.handle, nil)
		b.handle = 0
	}
	if b.mem != 0 {
		d.fn.freeMemory(d.handle, b.mem, nil)
		b.mem = 0
	}
	b.released = true
}

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int { return b.size }

// DeviceLocal reports whether the buffer's memory is device-local as well as host-visible.
func (b *Buffer) DeviceLocal() bool { return b.deviceLocal }

// bytesLocked returns the mapping as a slice after checking [offset, offset+n). d.mu is held.
func (b *Buffer) bytesLocked(op string, offset, n int) ([]byte, error) {
	if b.released {
		return nil, fmt.Errorf("vulkan: Buffer.%s: buffer released", op)
	}
	if offset < 0 || n < 0 || offset > b.size || n > b.size-offset {
		return nil, fmt.Errorf("vulkan: Buffer.%s: range [%d, %d+%d) outside the buffer's %d bytes", op, offset, offset, n, b.size)
	}
	return unsafe.Slice((*byte)(b.mapped), b.size)[offset : offset+n], nil
}

// Write copies data into the buffer at offset. The range must lie inside the buffer.
func (b *Buffer) Write(offset int, data []byte) error {
	b.dev.mu.Lock()
	defer b.dev.mu.Unlock()
	dst, err := b.bytesLocked("Write", offset, len(data))
	if err != nil {
		return err
	}
	b.dev.stats.HostWrites++
	copy(dst, data)
	return nil
}

// Read copies len(dst) bytes of the buffer from offset into dst. The range must lie inside the
// buffer.
func (b *Buffer) Read(offset int, dst []byte) error {
	b.dev.mu.Lock()
	defer b.dev.mu.Unlock()
	src, err := b.bytesLocked("Read", offset, len(dst))
	if err != nil {
		return err
	}
	b.dev.stats.HostReads++
	copy(dst, src)
	return nil
}

// Release frees the buffer. Releasing twice, or after the device was closed, is a no-op.
func (b *Buffer) Release() {
	d := b.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.released {
		return
	}
	b.destroy()
	delete(d.buffers, b)
}
