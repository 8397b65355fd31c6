package gpudrv

import (
	"fmt"
	"sync"
)

// Attr is a device attribute to read into an int: the driver's attribute number and where the
// value goes.
type Attr struct {
	ID  int
	Dst *int
}

// ReadAttrs reads device attributes through get: required ones (an error names the attribute)
// and optional ones, which drivers may have dropped (left 0 when get fails).
func ReadAttrs(get func(id int) (int, error), required, optional []Attr) error {
	for _, a := range required {
		v, err := get(a.ID)
		if err != nil {
			return fmt.Errorf("attribute %d: %w", a.ID, err)
		}
		*a.Dst = v
	}
	for _, a := range optional {
		if v, err := get(a.ID); err == nil {
			*a.Dst = v
		}
	}
	return nil
}

// ReadDims reads the largest block and grid dimensions: three consecutive attributes (x, y, z)
// from blockX and from gridX.
func ReadDims(get func(id int) (int, error), blockX, gridX int) (block, grid [3]uint32, err error) {
	for i := 0; i < 3; i++ {
		b, err := get(blockX + i)
		if err != nil {
			return block, grid, err
		}
		g, err := get(gridX + i)
		if err != nil {
			return block, grid, err
		}
		block[i], grid[i] = uint32(b), uint32(g)
	}
	return block, grid, nil
}

// PCIBusID formats the PCI address "domain:bus:device.0" from three attributes, or returns ""
// when the driver cannot say.
func PCIBusID(get func(id int) (int, error), domain, bus, device int) string {
	dom, err1 := get(domain)
	b, err2 := get(bus)
	slot, err3 := get(device)
	if err1 != nil || err2 != nil || err3 != nil {
		return ""
	}
	return fmt.Sprintf("%04x:%02x:%02x.0", dom, b, slot)
}

// List describes every device: count says how many there are (or why none can be used), info
// describes one. An error names the backend and the device, and the devices described before it
// are returned with it.
func List[T any](backend string, count func() (int, error), info func(index int) (T, error)) ([]T, error) {
	n, err := count()
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, n)
	for i := 0; i < n; i++ {
		v, err := info(i)
		if err != nil {
			return out, fmt.Errorf("%s: device %d: %w", backend, i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// CheckIndex checks that device index is one of the count devices there are, for Open.
func CheckIndex(backend string, count func() (int, error), index int) error {
	n, err := count()
	if err != nil {
		return err
	}
	if index < 0 || index >= n {
		return fmt.Errorf("%s: Open: device index %d out of range: %d device(s)", backend, index, n)
	}
	return nil
}

// Usable is a runtime's availability: it has a device (count) and its run-time compiler loads
// (compiler); the first error is why not.
func Usable(count func() (int, error), compiler func() error) error {
	if _, err := count(); err != nil {
		return err
	}
	return compiler()
}

// Memo remembers one result per key: a library loaded per path, an availability answer per
// library choice. The zero Memo is ready; it is safe for concurrent use.
type Memo[T any] struct {
	mu sync.Mutex
	m  map[string]memoResult[T]
}

type memoResult[T any] struct {
	v   T
	err error
}

// Get returns the result remembered for key, or calls load (holding the Memo's lock) and
// remembers what it returns, error included.
func (m *Memo[T]) Get(key string, load func() (T, error)) (T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.m[key]; ok {
		return r.v, r.err
	}
	v, err := load()
	if m.m == nil {
		m.m = map[string]memoResult[T]{}
	}
	m.m[key] = memoResult[T]{v, err}
	return v, err
}
