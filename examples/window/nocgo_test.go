//go:build !cgo

package main

import "testing"

// TestWindowFrames needs cgo for GLFW; without it, it skips saying so.
func TestWindowFrames(t *testing.T) {
	t.Skip("built without cgo: GLFW needs cgo and a C compiler (CGO_ENABLED=1)")
}
