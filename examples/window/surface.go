//go:build cgo

package main

/*
#include <stdint.h>

// glfwCreateWindowSurface is GLFW's (compiled into github.com/go-gl/glfw); declared here with
// plain C types so that the surface handle comes back by value. (The Go wrapper's
// Window.CreateWindowSurface takes the instance through reflection and returns the address of
// the handle rather than the handle.)
typedef struct GLFWwindow GLFWwindow;
int glfwCreateWindowSurface(void *instance, GLFWwindow *window, const void *allocator, uint64_t *surface);

static int createSurface(uintptr_t instance, void *window, uint64_t *surface) {
	return glfwCreateWindowSurface((void *)instance, (GLFWwindow *)window, 0, surface);
}
*/
import "C"

import (
	"fmt"

	"github.com/go-gl/glfw/v3.3/glfw"
)

// createSurface creates a VkSurfaceKHR for win on the VkInstance instance.
func createSurface(instance uintptr, win *glfw.Window) (uint64, error) {
	var s C.uint64_t
	if r := C.createSurface(C.uintptr_t(instance), win.Handle(), &s); r != 0 {
		return 0, fmt.Errorf("glfwCreateWindowSurface: VkResult %d", int(r))
	}
	return uint64(s), nil
}
