module example.com/onesource-cells

go 1.26.0

require github.com/onesource-go/onesource v0.0.0

require (
	github.com/ebitengine/purego v0.11.3 // indirect
	github.com/gogpu/naga v0.19.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
)

// This example lives inside the onesource repository; a copy elsewhere drops this line and
// requires a released version instead.
replace github.com/onesource-go/onesource => ../..

tool github.com/onesource-go/onesource/cmd/onesource
