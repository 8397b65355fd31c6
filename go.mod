module github.com/onesource-go/onesource

go 1.26

require (
	github.com/ebitengine/purego v0.11.3
	github.com/klauspost/cpuid/v2 v2.4.2
)

require golang.org/x/sys v0.41.0 // indirect
