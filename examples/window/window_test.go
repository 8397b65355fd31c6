//go:build cgo

package main

import (
	"bufio"
	"flag"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
)

var update = flag.Bool("update", false, "run updateFrames frames and write the last presented one to ../../docs/window.png")

// Test window: not square, so that the nearest-cell scaling differs in x and y.
const (
	testW      = 320
	testH      = 240
	testFrames = 12
	// The window is resized to testW2 x testH2 halfway through the test's frames.
	testW2, testH2 = 200, 150
	// updateFrames are run for the screenshot (-update), so that the pattern has grown.
	updateFrames = 250
)

// TestWindowFrames opens the window (under Xvfb when DISPLAY is unset), runs testFrames frames
// on the Vulkan device (resizing the window halfway), reads back every presented swapchain image (a transfer-source copy of
// the image after the buffer was copied into it) and compares the first and the last, byte
// for byte, with referenceFrame: the same frames computed in plain Go from the kernels'
// definitions.
func TestWindowFrames(t *testing.T) {
	runtime.LockOSThread() // GLFW calls stay on one thread
	defer runtime.UnlockOSThread()
	if err := vulkan.Available(); err != nil {
		t.Skipf("no Vulkan: %v", err)
	}
	ensureDisplay(t)

	v, err := newViewer(testW, testH, 0)
	if err != nil {
		t.Skipf("no window with a Vulkan surface (DISPLAY=%q): %v", os.Getenv("DISPLAY"), err)
	}
	defer func() {
		if err := v.close(); err != nil {
			t.Error(err)
		}
	}()
	info := v.dev.Info()
	t.Logf("device %s (%s), swapchain BGRA=%v, read-back %v", info.Name, info.DriverName, v.pres.BGRA(), v.pres.CanReadBack())
	if !v.pres.CanReadBack() {
		t.Skip("the surface's swapchain images cannot be transfer sources: no read-back")
	}

	// Big enough for any window on the Xvfb screen; Present reads back Size() pixels, packed.
	readBack, err := v.dev.NewBuffer(4 * 1024 * 768)
	if err != nil {
		t.Fatal(err)
	}
	frames := testFrames
	if *update {
		frames = updateFrames
	}
	presented := 0
	deadline := time.Now().Add(2 * time.Minute)
	for presented < frames {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d frames presented in 2 minutes", presented, frames)
		}
		if presented == frames/2 && !*update {
			// Halfway, resize the window: the swapchain is recreated and the last frame is
			// compared at the new size.
			v.win.SetSize(testW2, testH2)
		}
		ok, err := v.frame(readBack)
		if err != nil {
			t.Fatalf("frame %d: %v", presented+1, err)
		}
		if !ok {
			continue
		}
		presented++
		w, h := v.pres.Size()
		if presented != 1 && presented != frames {
			continue
		}
		got := make([]byte, 4*w*h)
		if err := readBack.Read(0, got); err != nil {
			t.Fatal(err)
		}
		want := referenceFrame(presented*stepsPerFrame, w, h, v.pres.BGRA())
		if i := firstDiff(got, want); i >= 0 {
			p := i / 4
			t.Fatalf("frame %d (%dx%d): pixel (%d, %d) = % x, want % x", presented, w, h, p%w, p/w, got[4*p:4*p+4], want[4*p:4*p+4])
		}
		t.Logf("frame %d (%d steps, %dx%d): %d bytes equal to the reference", presented, presented*stepsPerFrame, w, h, len(got))
		if presented == frames && !*update && (w != testW2 || h != testH2) {
			t.Errorf("after the resize the swapchain is %dx%d, want %dx%d", w, h, testW2, testH2)
		}
		if presented == frames && *update {
			writePNG(t, filepath.Join("..", "..", "docs", "window.png"), got, w, h, v.pres.BGRA())
		}
	}
}

// ensureDisplay starts Xvfb for the test when DISPLAY is unset, or skips saying why it cannot.
func ensureDisplay(t *testing.T) {
	if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
		return
	}
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Skip("no X server: DISPLAY is unset and Xvfb is not installed (apt-get install xvfb)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// -displayfd 3: Xvfb picks a free display and writes its number to the pipe when ready.
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1024x768x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Skipf("Xvfb did not start: %v", err)
	}
	w.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case n := <-line:
		if n == "" {
			t.Skip("Xvfb exited without a display")
		}
		t.Setenv("DISPLAY", ":"+n)
		t.Logf("started %s on DISPLAY=:%s", xvfb, n)
	case <-time.After(30 * time.Second):
		t.Skip("Xvfb did not report a display within 30s")
	}
}

// referenceFrame is the image after steps Gray-Scott steps from InitialState, scaled to w x h,
// computed in plain Go from the definitions in StepKernel's and ColourKernel's documentation.
// Every product is converted to float32 explicitly so Go does not fuse it into an FMA.
func referenceFrame(steps, w, h int, bgra bool) []byte {
	u, v := InitialState()
	nu := make([]float32, len(u))
	nv := make([]float32, len(v))
	at := func(a []float32, x, y int) float32 {
		return a[((y+gridH)%gridH)*gridW+(x+gridW)%gridW]
	}
	for s := 0; s < steps; s++ {
		for y := 0; y < gridH; y++ {
			for x := 0; x < gridW; x++ {
				i := y*gridW + x
				cu, cv := u[i], v[i]
				lapU := at(u, x-1, y) + at(u, x+1, y)
				lapU += at(u, x, y-1)
				lapU += at(u, x, y+1)
				lapU -= float32(cu * 4)
				lapV := at(v, x-1, y) + at(v, x+1, y)
				lapV += at(v, x, y-1)
				lapV += at(v, x, y+1)
				lapV -= float32(cv * 4)
				uv := float32(cu * cv)
				uvv := float32(uv * cv)
				fu := float32(feed * float32(1-cu))
				du := float32(diffU*lapU) - uvv
				du += fu
				fk := feed + kill
				fv := float32(fk * cv)
				dv := float32(diffV*lapV) + uvv
				dv -= fv
				nu[i] = cu + float32(du*dt)
				nv[i] = cv + float32(dv*dt)
			}
		}
		u, nu = nu, u
		v, nv = nv, v
	}
	out := make([]byte, 4*w*h)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			sx, sy := x*gridW/w, y*gridH/h
			s := float32(v[sy*gridW+sx] * 3)
			s = min(max(s, 0), 1)
			r := byte(uint32(float32(float32(s*s) * 255)))
			g := byte(uint32(float32(s * 255)))
			b := byte(uint32(64 + float32(s*191)))
			o := out[4*(y*w+x):]
			if bgra {
				r, b = b, r
			}
			o[0], o[1], o[2], o[3] = r, g, b, 255
		}
	}
	return out
}

func firstDiff(a, b []byte) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// writePNG writes the frame (in RGBA order whatever the swapchain's) as a PNG.
func writePNG(t *testing.T, path string, pix []byte, w, h int, bgra bool) {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	copy(img.Pix, pix)
	if bgra {
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+2] = img.Pix[i+2], img.Pix[i]
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}
