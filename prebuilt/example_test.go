package prebuilt_test

import (
	"fmt"
	"testing/fstest"

	"github.com/onesource-go/onesource/examples/saxpy"
	"github.com/onesource-go/onesource/generate"
	"github.com/onesource-go/onesource/prebuilt"
)

// A generated file declares its kernels with NewSet over its embedded files. Here package
// generate builds saxpy and an in-memory file system stands in for //go:embed. A set checks every
// file against the hash recorded at generation, so a hand-edited file is caught before anything
// runs it.
func ExampleNewSet() {
	built, err := generate.Build(saxpy.Kernels(), []string{"vulkan", "cuda"})
	if err != nil {
		fmt.Println(err)
		return
	}
	files := fstest.MapFS{}
	for _, f := range built[0].Files {
		files[f.Name] = &fstest.MapFile{Data: f.Data}
	}
	set := prebuilt.NewSet("example.com/kernels", files, []prebuilt.Kernel{built[0].Meta})
	k, err := set.Kernel("saxpy")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(k.Name, k.Workgroup, len(k.Buffers), "buffers", len(k.Params), "params")
	for _, a := range k.Artifacts {
		fmt.Println(a.Backend, a.File, len(a.Data()) > 0)
	}

	files["saxpy.cu"] = &fstest.MapFile{Data: []byte("// edited by hand\n")}
	edited := prebuilt.NewSet("example.com/kernels", files, []prebuilt.Kernel{built[0].Meta})
	_, err = edited.Kernel("saxpy")
	fmt.Println(err != nil)
	// Output:
	// saxpy [64 1 1] 2 buffers 2 params
	// cuda saxpy.cu true
	// vulkan saxpy.spv true
	// true
}

// A program that builds its kernels at run time gets the same Set from generate.NewSet and
// places it the same way; on a machine without any GPU runtime or Vulkan driver, Place says why
// each backend was passed over. (No Output: where it runs depends on the machine.)
func ExampleRuntime_Place() {
	set, err := generate.NewSet("example.com/jit", saxpy.Kernels(), []string{"vulkan"})
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, err := prebuilt.NewRuntime(prebuilt.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	k, _ := set.Kernel("saxpy")
	pl, err := rt.Place(k)
	if err != nil {
		fmt.Println(err) // a *prebuilt.NoBackendError listing every backend's reason
		return
	}
	x := make([]byte, 4*100)
	y := make([]byte, 4*100)
	if err := pl.Run([3]uint32{2, 1, 1}, [][]byte{x, y}, float32(2), uint32(100)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pl.Placement())
}
