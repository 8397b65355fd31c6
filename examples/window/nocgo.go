//go:build !cgo

package main

// Built without cgo the command only says what it needs (GLFW is C).

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "window: built without cgo: GLFW needs cgo and a C compiler (CGO_ENABLED=1)")
	os.Exit(1)
}
