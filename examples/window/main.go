//go:build cgo

// Command window shows onesource kernels feeding a window: a Gray-Scott reaction-diffusion
// simulation and a colour map, both DSL kernels run on the Vulkan device that presents, whose
// pixel buffer is copied into each swapchain image of a GLFW window.
//
// Keys: space pauses, S steps one frame while paused, R resets, Esc quits. The title shows the
// backend, the device and the kernels' time per frame.
//
//	cd examples/window && go run .
//
// It needs cgo (GLFW is C), X11 or Wayland development headers for GLFW's build, and a Vulkan
// driver with presentation support.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/go-gl/glfw/v3.3/glfw"
	"github.com/onesource-go/onesource/backends/vulkan"
)

func init() {
	// GLFW's event functions belong to the main thread.
	runtime.LockOSThread()
}

func main() {
	size := flag.Int("size", 512, "initial window size in pixels")
	device := flag.Int("device", 0, "Vulkan physical device index")
	frames := flag.Int("frames", 0, "quit after this many frames (0: run until closed)")
	flag.Parse()
	if err := run(*size, *device, *frames); err != nil {
		fmt.Fprintln(os.Stderr, "window:", err)
		os.Exit(1)
	}
}

func run(size, device, frames int) (err error) {
	v, err := newViewer(size, size, device)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := v.close(); err == nil {
			err = cerr
		}
	}()
	for n := 0; !v.win.ShouldClose() && (frames == 0 || n < frames); n++ {
		if _, err := v.frame(nil); err != nil {
			return err
		}
	}
	return nil
}

// viewer is a GLFW window presenting the simulation.
type viewer struct {
	win     *glfw.Window
	dev     *vulkan.Device
	pres    *vulkan.Presenter
	sim     *sim
	paused  bool
	stepOne bool
	resized bool
	last    time.Time
}

// newViewer opens a width x height window, the Vulkan device with what presenting to it needs,
// the presenter and the simulation. Whatever was created is released when it fails.
func newViewer(width, height, device int) (_ *viewer, err error) {
	if err := glfw.Init(); err != nil {
		return nil, err
	}
	v := &viewer{}
	defer func() {
		if err != nil {
			v.close() // v itself: the named result is nil on these paths
		}
	}()
	if !glfw.VulkanSupported() {
		return nil, errors.New("GLFW reports no Vulkan support (no loader with presentation support, or GLFW did not initialize: see its log above)")
	}
	glfw.WindowHint(glfw.ClientAPI, glfw.NoAPI)
	glfw.WindowHint(glfw.Resizable, glfw.True)
	if v.win, err = glfw.CreateWindow(width, height, "onesource", nil, nil); err != nil {
		return nil, err
	}
	exts := v.win.GetRequiredInstanceExtensions()
	if len(exts) == 0 {
		return nil, errors.New("GLFW names no Vulkan instance extensions for window surfaces")
	}
	v.dev, err = vulkan.Open(vulkan.Options{
		DeviceIndex:        device,
		InstanceExtensions: exts,
		DeviceExtensions:   []string{vulkan.SwapchainExtension},
	})
	if err != nil {
		return nil, err
	}
	surface, err := createSurface(v.dev.Handles().Instance, v.win)
	if err != nil {
		return nil, err
	}
	fw, fh := v.win.GetFramebufferSize()
	if v.pres, err = v.dev.NewPresenter(surface, fw, fh); err != nil {
		return nil, err
	}
	if v.sim, err = newSim(v.dev); err != nil {
		return nil, err
	}
	v.win.SetFramebufferSizeCallback(func(*glfw.Window, int, int) { v.resized = true })
	v.win.SetKeyCallback(func(w *glfw.Window, key glfw.Key, _ int, action glfw.Action, _ glfw.ModifierKey) {
		if action != glfw.Press {
			return
		}
		switch key {
		case glfw.KeyEscape:
			w.SetShouldClose(true)
		case glfw.KeySpace:
			v.paused = !v.paused
		case glfw.KeyS:
			v.stepOne = true
		case glfw.KeyR:
			if err := v.sim.reset(); err != nil {
				fmt.Fprintln(os.Stderr, "window: reset:", err)
			}
		}
	})
	return v, nil
}

// frame handles events, then (unless the window has no area) steps the simulation, colours
// it and presents it; readBack, when not nil, receives the presented image's bytes. It reports
// whether a frame was presented.
func (v *viewer) frame(readBack *vulkan.Buffer) (bool, error) {
	glfw.PollEvents()
	fw, fh := v.win.GetFramebufferSize()
	if fw == 0 || fh == 0 {
		glfw.WaitEventsTimeout(0.1) // minimized: nothing to draw until it has an area again
		return false, nil
	}
	if w, h := v.pres.Size(); v.resized || w == 0 || h == 0 {
		if err := v.pres.Resize(fw, fh); err != nil {
			return false, err
		}
		v.resized = false
	}
	w, h := v.pres.Size()
	if w == 0 || h == 0 {
		return false, nil
	}
	steps := stepsPerFrame
	if v.paused && !v.stepOne {
		steps = 0
	}
	v.stepOne = false
	pixels, err := v.sim.frame(steps, w, h, v.pres.BGRA())
	if err != nil {
		return false, err
	}
	stale, err := v.pres.Present(pixels, readBack)
	if errors.Is(err, vulkan.ErrOutOfDate) {
		v.resized = true
		return false, nil
	}
	if err != nil {
		return false, err
	}
	v.resized = v.resized || stale
	if time.Since(v.last) > 250*time.Millisecond {
		v.last = time.Now()
		state := ""
		if v.paused {
			state = " · paused"
		}
		info := v.dev.Info()
		v.win.SetTitle(fmt.Sprintf("onesource · Vulkan · %s · kernels %.3f ms/frame%s", info.Name, float64(v.sim.kernels.Microseconds())/1000, state))
	}
	return true, nil
}

// close releases everything newViewer created, in reverse order.
func (v *viewer) close() error {
	var errs []error
	if v.sim != nil {
		v.sim.release()
	}
	if v.pres != nil {
		errs = append(errs, v.pres.Close())
	}
	if v.dev != nil {
		errs = append(errs, v.dev.Close())
	}
	if v.win != nil {
		v.win.Destroy()
	}
	glfw.Terminate()
	return errors.Join(errs...)
}
