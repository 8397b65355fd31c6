//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gguf

import "os"

// mapFile reads the whole file into memory (no memory mapping on this platform).
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	b, err := readAll(fh, size)
	return b, nil, err
}
