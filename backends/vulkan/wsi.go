package vulkan

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// This file presents a Device's buffers to a window surface (Vulkan WSI): the device is opened
// with the instance extensions the window library asks for and VK_KHR_swapchain
// (Options.InstanceExtensions, Options.DeviceExtensions), the window library creates a
// VkSurfaceKHR on the device's instance (Handles), and a Presenter copies a buffer of pixels
// into each acquired swapchain image and presents it. The package itself stays free of cgo: the
// surface is created by the caller.

// SwapchainExtension is the device extension a Presenter needs (Options.DeviceExtensions).
const SwapchainExtension = "VK_KHR_swapchain"

// Handles are a Device's raw Vulkan handles, for libraries that create objects on them (a
// window library's vkCreate*SurfaceKHR takes the instance). They stay valid until Close.
type Handles struct {
	Instance       uintptr // VkInstance
	PhysicalDevice uintptr // VkPhysicalDevice
	Device         uintptr // VkDevice
	Queue          uintptr // VkQueue: the compute queue every submission goes to
	QueueFamily    uint32  // the queue's family index
}

// Handles returns the device's raw handles (zero after Close).
func (d *Device) Handles() Handles {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return Handles{}
	}
	return Handles{
		Instance:       uintptr(d.inst.handle),
		PhysicalDevice: uintptr(d.pd.handle),
		Device:         uintptr(d.handle),
		Queue:          uintptr(d.queue),
		QueueFamily:    uint32(d.pd.queueFamily),
	}
}

// ErrOutOfDate is returned by Presenter.Present when the swapchain no longer matches the
// surface and nothing was presented: call Presenter.Resize with the window's framebuffer size.
var ErrOutOfDate = errors.New("vulkan: the swapchain is out of date: resize it")

// acquireTimeout bounds the wait for a swapchain image.
const acquireTimeout = 5 * time.Second

// Presenter shows buffers of RGBA8 pixels in a window surface through a swapchain on the
// Device's queue. Its methods must not be called concurrently with each other; the Device's
// other methods may run meanwhile (submissions are serialized on the device). Close it before
// the Device.
type Presenter struct {
	d       *Device
	surface vkSurfaceKHR
	sf      vkSurfaceFuncs
	sc      vkSwapchainFuncs

	format    vkSurfaceFormatKHR
	usage     vkImageUsageFlags
	swapchain vkSwapchainKHR
	width     int
	height    int
	images    []vkImage
	done      []vkSemaphore // per image: the copy finished, the image may be presented
	acquired  vkSemaphore   // the acquired image may be written
	pool      vkCommandPool
	cmd       vkCommandBuffer
	fence     vkFence
	closed    bool
}

// NewPresenter takes over surface, a VkSurfaceKHR created on the device's instance
// (Handles().Instance), and creates a swapchain of width x height pixels (the surface's own
// extent where it dictates one). The device must have been opened with SwapchainExtension and
// the surface's instance extensions. The surface is destroyed by Close, also when NewPresenter
// fails.
func (d *Device) NewPresenter(surface uint64, width, height int) (*Presenter, error) {
	p := &Presenter{d: d, surface: vkSurfaceKHR(surface)}
	if err := p.init(); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.Resize(width, height); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Presenter) init() error {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usableLocked(context.Background()); err != nil {
		return err
	}
	in := d.inst
	if err := loadTable("the instance (VK_KHR_surface enabled?)", p.sf.entries(), func(name string) uintptr {
		return in.lib.getInstanceProc(in.handle, name)
	}); err != nil {
		return err
	}
	if p.surface == 0 {
		return fmt.Errorf("vulkan: NewPresenter: no surface")
	}
	enabled := false
	for _, x := range d.extensions {
		enabled = enabled || x == SwapchainExtension
	}
	if !enabled {
		return fmt.Errorf("vulkan: NewPresenter: the device was opened without %s (Options.DeviceExtensions)", SwapchainExtension)
	}
	if err := loadTable("the device", p.sc.entries(), func(name string) uintptr {
		return in.fn.getDeviceProcAddr(d.handle, cstr(name))
	}); err != nil {
		return err
	}
	var supported vkBool32
	if err := check("vkGetPhysicalDeviceSurfaceSupportKHR", p.sf.getPhysicalDeviceSurfaceSupportKHR(d.pd.handle, uint32(d.pd.queueFamily), p.surface, unsafe.Pointer(&supported))); err != nil {
		return err
	}
	if supported == 0 {
		return fmt.Errorf("vulkan: NewPresenter: queue family %d of device %d (%s) cannot present to the surface", d.pd.queueFamily, d.info.Index, d.info.Name)
	}

	var n uint32
	if err := check("vkGetPhysicalDeviceSurfaceFormatsKHR", p.sf.getPhysicalDeviceSurfaceFormatsKHR(d.pd.handle, p.surface, unsafe.Pointer(&n), nil)); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("vulkan: NewPresenter: the surface offers no formats")
	}
	formats := make([]vkSurfaceFormatKHR, n)
	if r := p.sf.getPhysicalDeviceSurfaceFormatsKHR(d.pd.handle, p.surface, unsafe.Pointer(&n), unsafe.Pointer(&formats[0])); r != vkIncomplete {
		if err := check("vkGetPhysicalDeviceSurfaceFormatsKHR", r); err != nil {
			return err
		}
	}
	f, ok := pickFormat(formats[:n])
	if !ok {
		return fmt.Errorf("vulkan: NewPresenter: the surface offers no 8-bit RGBA or BGRA format (%d formats)", n)
	}
	p.format = f

	pci := &vkCommandPoolCreateInfo{
		SType:            vkStructureTypeCommandPoolCreateInfo,
		Flags:            vkCommandPoolCreateResetCommandBufferBit,
		QueueFamilyIndex: uint32(d.pd.queueFamily),
	}
	if err := check("vkCreateCommandPool", d.fn.createCommandPool(d.handle, unsafe.Pointer(pci), nil, unsafe.Pointer(&p.pool))); err != nil {
		return err
	}
	cbai := &vkCommandBufferAllocateInfo{
		SType:              vkStructureTypeCommandBufferAllocateInfo,
		CommandPool:        p.pool,
		Level:              vkCommandBufferLevelPrimary,
		CommandBufferCount: 1,
	}
	if err := check("vkAllocateCommandBuffers", d.fn.allocateCommandBuffers(d.handle, unsafe.Pointer(cbai), unsafe.Pointer(&p.cmd))); err != nil {
		return err
	}
	fci := &vkFenceCreateInfo{SType: vkStructureTypeFenceCreateInfo}
	if err := check("vkCreateFence", d.fn.createFence(d.handle, unsafe.Pointer(fci), nil, unsafe.Pointer(&p.fence))); err != nil {
		return err
	}
	return p.newSemaphore(&p.acquired)
}

// pickFormat prefers B8G8R8A8_UNORM, then R8G8B8A8_UNORM, then their sRGB twins (the copy moves
// bytes unchanged whichever the encoding).
func pickFormat(formats []vkSurfaceFormatKHR) (vkSurfaceFormatKHR, bool) {
	for _, want := range []vkFormat{vkFormatB8g8r8a8Unorm, vkFormatR8g8b8a8Unorm, vkFormatB8g8r8a8Srgb, vkFormatR8g8b8a8Srgb} {
		for _, f := range formats {
			if f.Format == want {
				return f, true
			}
		}
	}
	return vkSurfaceFormatKHR{}, false
}

func (p *Presenter) newSemaphore(s *vkSemaphore) error {
	d := p.d
	sci := &vkSemaphoreCreateInfo{SType: vkStructureTypeSemaphoreCreateInfo}
	return check("vkCreateSemaphore", p.sc.createSemaphore(d.handle, unsafe.Pointer(sci), nil, unsafe.Pointer(s)))
}

// BGRA reports whether the swapchain's pixels are stored B, G, R, A in memory (else R, G, B, A):
// the order the buffers given to Present must use.
func (p *Presenter) BGRA() bool {
	return p.format.Format == vkFormatB8g8r8a8Unorm || p.format.Format == vkFormatB8g8r8a8Srgb
}

// Size is the swapchain's extent in pixels (0, 0 while the surface has no area, e.g. a
// minimized window).
func (p *Presenter) Size() (width, height int) { return p.width, p.height }

// CanReadBack reports whether Present can copy the presented image back (the surface supports
// transfer-source swapchain images).
func (p *Presenter) CanReadBack() bool { return p.usage&vkImageUsageTransferSrcBit != 0 }

// Resize recreates the swapchain for a surface of width x height pixels (the surface's own
// extent where it dictates one). A zero-area surface leaves no swapchain: Present returns
// ErrOutOfDate until a later Resize finds an area.
func (p *Presenter) Resize(width, height int) error {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.closed {
		return fmt.Errorf("vulkan: Presenter is closed")
	}
	if err := d.usableLocked(context.Background()); err != nil {
		return err
	}
	if err := check("vkQueueWaitIdle", d.fn.queueWaitIdle(d.queue)); err != nil {
		return d.fatal(err)
	}
	var caps vkSurfaceCapabilitiesKHR
	if err := check("vkGetPhysicalDeviceSurfaceCapabilitiesKHR", p.sf.getPhysicalDeviceSurfaceCapabilitiesKHR(d.pd.handle, p.surface, unsafe.Pointer(&caps))); err != nil {
		return err
	}
	ext := caps.CurrentExtent
	if ext.Width == 0xFFFFFFFF {
		ext = vkExtent2D{Width: clampU32(width, caps.MinImageExtent.Width, caps.MaxImageExtent.Width), Height: clampU32(height, caps.MinImageExtent.Height, caps.MaxImageExtent.Height)}
	}
	old := p.swapchain
	p.releaseImagesLocked()
	if ext.Width == 0 || ext.Height == 0 {
		if old != 0 {
			p.sc.destroySwapchainKHR(d.handle, old, nil)
		}
		p.swapchain, p.width, p.height = 0, 0, 0
		return nil
	}
	if caps.SupportedUsageFlags&vkImageUsageTransferDstBit == 0 {
		return fmt.Errorf("vulkan: the surface's swapchain images cannot be transfer destinations (supportedUsageFlags %#x)", caps.SupportedUsageFlags)
	}
	p.usage = vkImageUsageTransferDstBit | caps.SupportedUsageFlags&vkImageUsageTransferSrcBit
	count := caps.MinImageCount + 1
	if caps.MaxImageCount != 0 && count > caps.MaxImageCount {
		count = caps.MaxImageCount
	}
	alpha := vkCompositeAlphaFlagBitsKHR(vkCompositeAlphaOpaqueBitKhr)
	if caps.SupportedCompositeAlpha&alpha == 0 {
		alpha = caps.SupportedCompositeAlpha & -caps.SupportedCompositeAlpha // lowest supported
	}
	sci := &vkSwapchainCreateInfoKHR{
		SType:            vkStructureTypeSwapchainCreateInfoKhr,
		Surface:          p.surface,
		MinImageCount:    count,
		ImageFormat:      p.format.Format,
		ImageColorSpace:  p.format.ColorSpace,
		ImageExtent:      ext,
		ImageArrayLayers: 1,
		ImageUsage:       p.usage,
		ImageSharingMode: vkSharingModeExclusive,
		PreTransform:     caps.CurrentTransform,
		CompositeAlpha:   alpha,
		PresentMode:      vkPresentModeFifoKhr, // the one mode every surface supports
		Clipped:          vkTrue,
		OldSwapchain:     old,
	}
	var sw vkSwapchainKHR
	r := p.sc.createSwapchainKHR(d.handle, unsafe.Pointer(sci), nil, unsafe.Pointer(&sw))
	if old != 0 {
		p.sc.destroySwapchainKHR(d.handle, old, nil) // retired either way
	}
	p.swapchain, p.width, p.height = 0, 0, 0
	if err := check("vkCreateSwapchainKHR", r); err != nil {
		return err
	}
	p.swapchain = sw
	var n uint32
	if err := check("vkGetSwapchainImagesKHR", p.sc.getSwapchainImagesKHR(d.handle, sw, unsafe.Pointer(&n), nil)); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("vulkan: the swapchain has no images")
	}
	images := make([]vkImage, n)
	if err := check("vkGetSwapchainImagesKHR", p.sc.getSwapchainImagesKHR(d.handle, sw, unsafe.Pointer(&n), unsafe.Pointer(&images[0]))); err != nil {
		return err
	}
	p.images = images[:n]
	p.done = make([]vkSemaphore, n)
	for i := range p.done {
		if err := p.newSemaphore(&p.done[i]); err != nil {
			return err
		}
	}
	p.width, p.height = int(ext.Width), int(ext.Height)
	return nil
}

func clampU32(v int, lo, hi uint32) uint32 {
	switch {
	case v < int(lo):
		return lo
	case v > int(hi):
		return hi
	}
	return uint32(v)
}

// releaseImagesLocked destroys the per-image semaphores (the queue must be idle).
func (p *Presenter) releaseImagesLocked() {
	for _, s := range p.done {
		if s != 0 {
			p.sc.destroySemaphore(p.d.handle, s, nil)
		}
	}
	p.done, p.images = nil, nil
}

// Present copies src (width*height*4 bytes for the swapchain's Size, rows packed, pixels in
// the order BGRA says) into the next swapchain image and presents it. When readBack is not
// nil the image's bytes are also copied into it (as src's layout) before presenting: the
// pixels the surface is given. It waits for the copies to finish. It returns ErrOutOfDate,
// having presented nothing, when the swapchain must be resized first; stale reports a
// presented frame after which it should be (VK_SUBOPTIMAL_KHR or out of date at present).
func (p *Presenter) Present(src, readBack *Buffer) (stale bool, err error) {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.closed {
		return false, fmt.Errorf("vulkan: Presenter is closed")
	}
	if err := d.usableLocked(context.Background()); err != nil {
		return false, err
	}
	if p.swapchain == 0 {
		return false, ErrOutOfDate
	}
	size := p.width * p.height * 4
	for _, b := range []*Buffer{src, readBack} {
		if b == nil {
			continue
		}
		if b.dev != d || b.released {
			return false, fmt.Errorf("vulkan: Present: a buffer released or of another device")
		}
		if b.size < size {
			return false, fmt.Errorf("vulkan: Present: buffer of %d bytes; the %dx%d swapchain needs %d", b.size, p.width, p.height, size)
		}
	}
	if src == nil {
		return false, fmt.Errorf("vulkan: Present: no source buffer")
	}
	if readBack != nil && !p.CanReadBack() {
		return false, fmt.Errorf("vulkan: Present: the surface's swapchain images cannot be read back (no transfer-source usage)")
	}

	var index uint32
	r := p.sc.acquireNextImageKHR(d.handle, p.swapchain, uint64(acquireTimeout.Nanoseconds()), p.acquired, 0, unsafe.Pointer(&index))
	switch r {
	case vkSuccess:
	case vkSuboptimalKhr:
		stale = true
	case vkErrorOutOfDateKhr:
		return false, ErrOutOfDate
	default:
		return false, d.fatal(check("vkAcquireNextImageKHR", r))
	}
	if int(index) >= len(p.images) {
		return false, fmt.Errorf("vulkan: vkAcquireNextImageKHR returned image %d of %d", index, len(p.images))
	}
	image := p.images[index]

	if err := p.record(src, readBack, image); err != nil {
		// The acquire semaphore will be signalled but nothing waits for it: replace it.
		p.replaceAcquired()
		return false, err
	}
	if err := check("vkResetFences", d.fn.resetFences(d.handle, 1, unsafe.Pointer(&p.fence))); err != nil {
		p.replaceAcquired()
		return false, err
	}
	waitStage := vkPipelineStageFlags(vkPipelineStageTransferBit)
	si := &vkSubmitInfo{
		SType:                vkStructureTypeSubmitInfo,
		WaitSemaphoreCount:   1,
		PWaitSemaphores:      unsafe.Pointer(&p.acquired),
		PWaitDstStageMask:    unsafe.Pointer(&waitStage),
		CommandBufferCount:   1,
		PCommandBuffers:      unsafe.Pointer(&p.cmd),
		SignalSemaphoreCount: 1,
		PSignalSemaphores:    unsafe.Pointer(&p.done[index]),
	}
	if err := d.fatal(check("vkQueueSubmit", d.fn.queueSubmit(d.queue, 1, unsafe.Pointer(si), p.fence))); err != nil {
		p.replaceAcquired()
		return false, err
	}
	d.stats.Submits++
	pi := &vkPresentInfoKHR{
		SType:              vkStructureTypePresentInfoKhr,
		WaitSemaphoreCount: 1,
		PWaitSemaphores:    unsafe.Pointer(&p.done[index]),
		SwapchainCount:     1,
		PSwapchains:        unsafe.Pointer(&p.swapchain),
		PImageIndices:      unsafe.Pointer(&index),
	}
	pr := p.sc.queuePresentKHR(d.queue, unsafe.Pointer(pi))
	// Wait for the copies whatever the present said: the command buffer and, for a read-back,
	// the bytes are needed.
	if err := p.waitLocked(); err != nil {
		return false, err
	}
	switch pr {
	case vkSuccess:
	case vkSuboptimalKhr, vkErrorOutOfDateKhr:
		stale = true
	default:
		return false, d.fatal(check("vkQueuePresentKHR", pr))
	}
	return stale, nil
}

// replaceAcquired swaps the acquire semaphore for a fresh one after a failure left it to be
// signalled with no waiter (the queue is drained first so the old one is idle).
func (p *Presenter) replaceAcquired() {
	d := p.d
	if d.fn.queueWaitIdle(d.queue) != vkSuccess {
		return // keep it: destroying a possibly pending semaphore is worse
	}
	p.sc.destroySemaphore(d.handle, p.acquired, nil)
	p.acquired = 0
	if err := p.newSemaphore(&p.acquired); err != nil {
		d.broken = err
	}
}

func (p *Presenter) waitLocked() error {
	d := p.d
	limit := time.Now().Add(fenceTimeout)
	for {
		r := d.fn.waitForFences(d.handle, 1, unsafe.Pointer(&p.fence), vkTrue, uint64(waitSlice.Nanoseconds()))
		if r != vkTimeout {
			return d.fatal(check("vkWaitForFences", r))
		}
		if time.Now().After(limit) {
			d.broken = &ResultError{Call: "vkWaitForFences", Result: int32(r)}
			return fmt.Errorf("vulkan: present copy did not finish within %v: %w", fenceTimeout, d.broken)
		}
	}
}

// record records the copy of src into image (and back into readBack) with the layout
// transitions: UNDEFINED -> TRANSFER_DST -> (TRANSFER_SRC ->) PRESENT_SRC.
func (p *Presenter) record(src, readBack *Buffer, image vkImage) error {
	d := p.d
	cmd := p.cmd
	bi := &vkCommandBufferBeginInfo{
		SType: vkStructureTypeCommandBufferBeginInfo,
		Flags: vkCommandBufferUsageOneTimeSubmitBit,
	}
	if err := check("vkBeginCommandBuffer", d.fn.beginCommandBuffer(cmd, unsafe.Pointer(bi))); err != nil {
		return err
	}
	size := uint64(p.width * p.height * 4)
	rng := vkImageSubresourceRange{AspectMask: vkImageAspectColorBit, LevelCount: 1, LayerCount: 1}
	imageBarrier := func(srcAccess, dstAccess vkAccessFlags, from, to vkImageLayout) *vkImageMemoryBarrier {
		return &vkImageMemoryBarrier{
			SType:               vkStructureTypeImageMemoryBarrier,
			SrcAccessMask:       srcAccess,
			DstAccessMask:       dstAccess,
			OldLayout:           from,
			NewLayout:           to,
			SrcQueueFamilyIndex: vkQueueFamilyIgnored,
			DstQueueFamilyIndex: vkQueueFamilyIgnored,
			Image:               image,
			SubresourceRange:    rng,
		}
	}
	// The kernels' writes to src (earlier submissions) become visible to the copy; the image's
	// old contents are discarded.
	bb := &vkBufferMemoryBarrier{
		SType:               vkStructureTypeBufferMemoryBarrier,
		SrcAccessMask:       vkAccessShaderWriteBit | vkAccessHostWriteBit | vkAccessTransferWriteBit,
		DstAccessMask:       vkAccessTransferReadBit,
		SrcQueueFamilyIndex: vkQueueFamilyIgnored,
		DstQueueFamilyIndex: vkQueueFamilyIgnored,
		Buffer:              src.handle,
		Size:                size,
	}
	toDst := imageBarrier(0, vkAccessTransferWriteBit, vkImageLayoutUndefined, vkImageLayoutTransferDstOptimal)
	d.fn.cmdPipelineBarrier(cmd, vkPipelineStageComputeShaderBit|vkPipelineStageHostBit|vkPipelineStageTransferBit, vkPipelineStageTransferBit, 0,
		0, nil, 1, unsafe.Pointer(bb), 1, unsafe.Pointer(toDst))
	region := &vkBufferImageCopy{
		ImageSubresource: vkImageSubresourceLayers{AspectMask: vkImageAspectColorBit, LayerCount: 1},
		ImageExtent:      vkExtent3D{Width: uint32(p.width), Height: uint32(p.height), Depth: 1},
	}
	p.sc.cmdCopyBufferToImage(cmd, src.handle, image, vkImageLayoutTransferDstOptimal, 1, unsafe.Pointer(region))
	layout, access := vkImageLayout(vkImageLayoutTransferDstOptimal), vkAccessFlags(vkAccessTransferWriteBit)
	if readBack != nil {
		toSrc := imageBarrier(vkAccessTransferWriteBit, vkAccessTransferReadBit, vkImageLayoutTransferDstOptimal, vkImageLayoutTransferSrcOptimal)
		d.fn.cmdPipelineBarrier(cmd, vkPipelineStageTransferBit, vkPipelineStageTransferBit, 0, 0, nil, 0, nil, 1, unsafe.Pointer(toSrc))
		p.sc.cmdCopyImageToBuffer(cmd, image, vkImageLayoutTransferSrcOptimal, readBack.handle, 1, unsafe.Pointer(region))
		toHost := &vkBufferMemoryBarrier{
			SType:               vkStructureTypeBufferMemoryBarrier,
			SrcAccessMask:       vkAccessTransferWriteBit,
			DstAccessMask:       vkAccessHostReadBit,
			SrcQueueFamilyIndex: vkQueueFamilyIgnored,
			DstQueueFamilyIndex: vkQueueFamilyIgnored,
			Buffer:              readBack.handle,
			Size:                size,
		}
		d.fn.cmdPipelineBarrier(cmd, vkPipelineStageTransferBit, vkPipelineStageHostBit, 0, 0, nil, 1, unsafe.Pointer(toHost), 0, nil)
		layout, access = vkImageLayoutTransferSrcOptimal, vkAccessTransferReadBit
	}
	// Presentation is ordered by the semaphore; the layout change must still be made.
	toPresent := imageBarrier(access, 0, layout, vkImageLayoutPresentSrcKhr)
	d.fn.cmdPipelineBarrier(cmd, vkPipelineStageTransferBit, vkPipelineStageBottomOfPipeBit, 0, 0, nil, 0, nil, 1, unsafe.Pointer(toPresent))
	return check("vkEndCommandBuffer", d.fn.endCommandBuffer(cmd))
}

// Close waits for the presenter's work and destroys the swapchain, its semaphores, command
// pool and fence, and the surface. It must come before the Device's Close (the surface belongs
// to the device's instance); after it, Close reports the leak instead. Closing twice is a no-op.
func (p *Presenter) Close() error {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if d.closed {
		return fmt.Errorf("vulkan: Presenter.Close after Device.Close: the swapchain and surface were not destroyed")
	}
	var err error
	if d.handle != 0 {
		err = check("vkQueueWaitIdle", d.fn.queueWaitIdle(d.queue))
		if p.sc.vkDestroySemaphore != 0 {
			p.releaseImagesLocked()
			if p.acquired != 0 {
				p.sc.destroySemaphore(d.handle, p.acquired, nil)
			}
		}
		if p.swapchain != 0 {
			p.sc.destroySwapchainKHR(d.handle, p.swapchain, nil)
		}
		if p.fence != 0 {
			d.fn.destroyFence(d.handle, p.fence, nil)
		}
		if p.pool != 0 {
			d.fn.destroyCommandPool(d.handle, p.pool, nil)
		}
	}
	if p.surface != 0 && p.sf.vkDestroySurfaceKHR != 0 {
		p.sf.destroySurfaceKHR(d.inst.handle, p.surface, nil)
	} else if p.surface != 0 && d.inst.handle != 0 {
		// The table did not load; the loader's own entry point still destroys it.
		if fn := d.inst.lib.getInstanceProc(d.inst.handle, "vkDestroySurfaceKHR"); fn != 0 {
			vkCall(fn, uintptr(d.inst.handle), uintptr(p.surface), 0)
		}
	}
	p.surface = 0
	return err
}
