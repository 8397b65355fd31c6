module example.com/onesource-window

go 1.26.0

require github.com/onesource-go/onesource v0.0.0

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/go-gl/glfw/v3.3/glfw v0.0.0-20260823155953-d41da22a9587
)

// This example lives inside the onesource repository; a copy elsewhere drops this line and
// requires a released version instead.
replace github.com/onesource-go/onesource => ../..
