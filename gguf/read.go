package gguf

import (
	"fmt"
	"io"
	"math"
	"os"
)

// readAll reads the whole file of the given size from its start.
func readAll(fh *os.File, size int64) ([]byte, error) {
	if size < 0 || size > math.MaxInt {
		return nil, fmt.Errorf("file size %d cannot be held in memory", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(fh, 0, size), b); err != nil {
		return nil, err
	}
	return b, nil
}
