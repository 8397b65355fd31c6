module github.com/onesource-go/onesource

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	github.com/gogpu/naga v0.19.0
	github.com/klauspost/cpuid/v2 v2.4.2
	golang.org/x/tools v0.52.0
)

require (
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
