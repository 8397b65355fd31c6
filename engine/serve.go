package engine

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
	"github.com/onesource-go/onesource/registry"
	"github.com/onesource-go/onesource/tuning"
)

// call is one op call, ready to be served: its cell, operands by the names the twin (and the
// manifest) bind them by, the twin's parameters by name, its grid at a schedule, and the shape
// variables the manifest's expressions read.
type call struct {
	op       string
	typ      oracle.Type
	operands map[string]vulkan.View
	params   map[string]uint32
	groups   func(s kernels.Schedule) [3]uint32
	vars     map[string]float64
	bytes    int
}

func (c *call) cell() string { return c.op + "/" + c.typ.String() + "/" + Backend }

type twinKey struct {
	op  string
	typ oracle.Type
}

// twin is a cell's twin compiled for the device at its schedule.
type twin struct {
	sched  kernels.Schedule
	tuned  bool
	why    string
	pipe   *vulkan.Pipeline
	params []string // parameter names in push-constant order
	hash   string   // of the SPIR-V words
	err    error    // why the twin cannot serve
}

// hand is an incumbent instantiated at one shape.
type hand struct {
	launch  *incumbent.Launch
	pipe    *vulkan.Pipeline
	scratch []*vulkan.Buffer // per binding; nil for operands
}

// serve resolves c's cell and queues its dispatch. e.mu is held.
func (e *Engine) serve(c *call) error {
	if e.closed {
		return fmt.Errorf("engine: %s: closed", c.op)
	}
	rec := Call{Cell: c.cell(), Bytes: c.bytes, Label: e.label}
	impl, why := registry.Twin, "no registry: the twin serves"
	if r := e.reg.Load(); r != nil {
		ch := r.SelectOn(c.op, c.typ.String(), Backend, e.device, e.driver)
		rec.State = ch.State
		switch ch.Impl {
		case registry.Twin:
			why = fmt.Sprintf("registry: %s", ch.State)
		case registry.Incumbent:
			impl, why = registry.Incumbent, fmt.Sprintf("registry: %s", ch.State)
		default:
			if ch.State == registry.Failing {
				return fmt.Errorf("engine: %s: the registry marks the cell failing (its twin is not bit-exact) and names no incumbent: nothing may serve it", rec.Cell)
			}
			why = "no registry evidence for this device: the twin serves"
		}
	}
	var (
		pipe   *vulkan.Pipeline
		views  []vulkan.View
		push   []byte
		groups [3]uint32
	)
	switch impl {
	case registry.Twin:
		tw, err := e.twinFor(c)
		if err != nil {
			return err
		}
		if views, err = bindViews(c, tw.pipe.Module().Bindings, nil); err != nil {
			return err
		}
		push = make([]byte, 4*len(tw.params))
		for i, name := range tw.params {
			v, ok := c.params[name]
			if !ok {
				return fmt.Errorf("engine: %s: the twin takes parameter %q, which the call does not set", rec.Cell, name)
			}
			binary.LittleEndian.PutUint32(push[4*i:], v)
		}
		pipe, groups = tw.pipe, c.groups(tw.sched)
		rec.Kernel, rec.Tuned = tw.sched.String(), tw.tuned
		why += "; " + tw.why
	case registry.Incumbent:
		h, name, err := e.handFor(c)
		if err != nil {
			return err
		}
		if views, err = bindViews(c, h.pipe.Module().Bindings, h); err != nil {
			return err
		}
		pipe, push, groups = h.pipe, h.launch.Push, h.launch.Groups
		rec.Kernel = name
	}
	rec.Impl, rec.Why, rec.Groups = impl, why, groups
	if err := e.stream.Dispatch(pipe, views, push, groups); err != nil {
		return fmt.Errorf("engine: %s (%s): %w", rec.Cell, rec.Kernel, err)
	}
	ti := -1 // one pending entry per queued dispatch: its trace index, or -1 when not traced
	if e.tracing {
		e.trace = append(e.trace, rec)
		ti = len(e.trace) - 1
	}
	e.pending = append(e.pending, ti)
	return nil
}

// bindViews orders c's operands by the kernel's bindings; h supplies scratch buffers.
func bindViews(c *call, bindings []vulkan.Binding, h *hand) ([]vulkan.View, error) {
	views := make([]vulkan.View, len(bindings))
	for i, b := range bindings {
		if h != nil && h.scratch[i] != nil {
			views[i] = h.scratch[i].Whole()
			continue
		}
		name := b.Name
		if h != nil {
			name = h.launch.Operands[i]
		}
		v, ok := c.operands[name]
		if !ok {
			have := slices.Sorted(maps.Keys(c.operands))
			return nil, fmt.Errorf("engine: %s: binding %d wants operand %q; the call has %s", c.cell(), i, name, strings.Join(have, ", "))
		}
		if h != nil && i < len(h.launch.Offsets) && (h.launch.Offsets[i] != 0 || h.launch.Sizes[i] != 0) {
			// The manifest binds this operand at an offset into it (and a size).
			off, size := h.launch.Offsets[i], h.launch.Sizes[i]
			if size == 0 {
				size = v.Size - off
			}
			if off+size > v.Size || size <= 0 {
				return nil, fmt.Errorf("engine: %s: binding %d (%s): the manifest's range [%d, %d+%d) is outside the operand's %d bytes", c.cell(), i, name, off, off, size, v.Size)
			}
			v.Offset, v.Size = v.Offset+off, size
		}
		views[i] = v
	}
	return views, nil
}

// twinFor returns the compiled twin of c's cell, compiling it on first use. e.mu is held.
func (e *Engine) twinFor(c *call) (*twin, error) {
	key := twinKey{c.op, c.typ}
	if tw, ok := e.twins[key]; ok {
		return tw, tw.err
	}
	tw := e.buildTwin(c)
	e.twins[key] = tw
	return tw, tw.err
}

func (e *Engine) buildTwin(c *call) *twin {
	tw := &twin{}
	cell, ok := kernels.Lookup(c.op, c.typ)
	if !ok {
		tw.err = fmt.Errorf("engine: %s: no DSL twin for this cell, and the registry does not send it to an incumbent", c.cell())
		return tw
	}
	def := cell.DefaultScheduleFor(Backend, e.caps)
	tw.sched, tw.tuned, tw.why = def, false, "default schedule (no tuning cache)"
	if e.opts.Tuning != nil {
		if h, err := cell.SourceHash(); err == nil {
			device, driver := e.dev.Info().Evidence()
			key := tuning.Key{Cell: cell.Name(), Backend: Backend, Device: device, Driver: driver, TwinHash: h}
			tw.sched, tw.tuned, tw.why = kernels.ChooseSchedule(e.opts.Tuning, key, cell, def)
		}
	}
	k, err := cell.Build(tw.sched).Build()
	if err != nil {
		tw.err = fmt.Errorf("engine: %s: the twin does not build at %s: %w", c.cell(), tw.sched, err)
		return tw
	}
	m, err := e.dev.Compile(k)
	if err != nil {
		tw.err = fmt.Errorf("engine: %s: compiling the twin: %w", c.cell(), err)
		return tw
	}
	if tw.pipe, err = e.dev.Pipeline(m); err != nil {
		tw.err = fmt.Errorf("engine: %s: %w", c.cell(), err)
		return tw
	}
	for _, p := range k.Params {
		tw.params = append(tw.params, p.Name)
	}
	tw.hash = incumbent.HashWords(m.Words)
	return tw
}

// handFor returns the incumbent of c's cell instantiated at c's shape. e.mu is held.
func (e *Engine) handFor(c *call) (*hand, string, error) {
	m := e.opts.Manifest
	if m == nil {
		return nil, "", fmt.Errorf("engine: %s: the registry sends the cell to its hand-written incumbent, but the engine has no incumbent manifest", c.cell())
	}
	ent := m.Entry(c.op, c.typ.String(), Backend)
	if ent == nil {
		return nil, "", fmt.Errorf("engine: %s: the registry sends the cell to its hand-written incumbent, but the manifest names none for it", c.cell())
	}
	var sb strings.Builder
	sb.WriteString(ent.Name)
	for _, k := range slices.Sorted(maps.Keys(c.vars)) {
		fmt.Fprintf(&sb, ",%s=%v", k, c.vars[k])
	}
	key := sb.String()
	if h, ok := e.hands[key]; ok {
		return h, ent.Name, nil
	}
	l, err := ent.VulkanFor(e.dev.Info(), c.vars)
	if err != nil {
		return nil, "", fmt.Errorf("engine: %s: %w", c.cell(), err)
	}
	p, err := e.dev.Pipeline(l.Module)
	if err != nil {
		return nil, "", fmt.Errorf("engine: %s: incumbent %s: %w", c.cell(), ent.Name, err)
	}
	h := &hand{launch: l, pipe: p, scratch: make([]*vulkan.Buffer, len(l.Operands))}
	for i, n := range l.Scratch {
		if n > 0 {
			if h.scratch[i], err = e.dev.NewBuffer((n + 3) &^ 3); err != nil {
				return nil, "", fmt.Errorf("engine: %s: incumbent %s scratch: %w", c.cell(), ent.Name, err)
			}
		}
	}
	e.hands[key] = h
	return h, ent.Name, nil
}

// tablesFor returns the device copies of type t's lookup tables (kernels.Tables), in binding
// order, uploading them on first use. e.mu is held.
func (e *Engine) tablesFor(t oracle.Type) ([]string, []*vulkan.Buffer, error) {
	names, data, err := kernels.Tables(t)
	if err != nil {
		return nil, nil, err
	}
	if bufs, ok := e.tables[t]; ok {
		return names, bufs, nil
	}
	var bufs []*vulkan.Buffer
	for i, d := range data {
		b, err := e.dev.NewBuffer(max(4, (len(d)+3)&^3))
		if err == nil {
			err = b.Write(0, d)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("engine: table %s of %s: %w", names[i], t, err)
		}
		bufs = append(bufs, b)
	}
	e.tables[t] = bufs
	return names, bufs, nil
}
