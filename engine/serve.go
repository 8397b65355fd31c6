package engine

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/onesource-go/onesource/incumbent"
	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/lower"
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
	operands map[string]view
	params   map[string]uint32
	groups   func(s kernels.Schedule) [3]uint32
	vars     map[string]float64
	bytes    int
	backend  string // set by serve
}

func (c *call) cell() string { return c.op + "/" + c.typ.String() + "/" + c.backend }

type twinKey struct {
	op  string
	typ oracle.Type
}

// twin is a cell's twin compiled for the device at its schedule.
type twin struct {
	sched kernels.Schedule
	tuned bool
	why   string
	prog  program
	diag  *lower.Diagnostics // checked mode: the table of the twin's report (its last binding)
	err   error              // why the twin cannot serve
}

// hand is an incumbent instantiated at one shape.
type hand struct {
	launch  *incumbent.Launch
	prog    program
	scratch []buffer // per binding; nil for operands
}

// serve resolves c's cell and queues its dispatch. e.mu is held.
func (e *Engine) serve(c *call) error {
	c.backend = e.backend
	if e.closed {
		return fmt.Errorf("engine: %s: closed", c.op)
	}
	rec := Call{Cell: c.cell(), Bytes: c.bytes, Label: e.label}
	impl, why := registry.Twin, "no registry: the twin serves"
	if r := e.reg.Load(); r != nil {
		ch := r.SelectOn(c.op, c.typ.String(), e.backend, e.device, e.driver)
		rec.State = ch.State
		switch ch.Impl {
		case registry.Twin:
			why = fmt.Sprintf("registry: %s", ch.State)
		case registry.Incumbent:
			impl, why = registry.Incumbent, fmt.Sprintf("registry: %s", ch.State)
			if !e.dev.incumbents() {
				if ch.State == registry.Failing {
					return fmt.Errorf("engine: %s: the registry marks the cell failing (its twin is not bit-exact), and its incumbent is Vulkan SPIR-V, which the %s backend does not run: nothing may serve it", rec.Cell, e.backend)
				}
				// Never silently: the trace says the registry's incumbent was passed over.
				impl, why = registry.Twin, fmt.Sprintf("registry: %s, but its incumbent is Vulkan SPIR-V, which the %s backend does not run: the twin serves", ch.State, e.backend)
			}
		default:
			if ch.State == registry.Failing {
				return fmt.Errorf("engine: %s: the registry marks the cell failing (its twin is not bit-exact) and names no incumbent: nothing may serve it", rec.Cell)
			}
			why = "no registry evidence for this device: the twin serves"
		}
	}
	var (
		prog   program
		views  []view
		push   []byte
		groups [3]uint32
		report *pendingReport
	)
	switch impl {
	case registry.Twin:
		tw, err := e.twinFor(c)
		if err != nil {
			return err
		}
		bindings := tw.prog.bindings()
		if tw.diag != nil {
			bindings = bindings[:len(bindings)-1] // the report, bound below
		}
		if views, err = bindViews(c, bindings, nil); err != nil {
			return err
		}
		if tw.diag != nil {
			a, slot, err := e.reportSlot()
			if err != nil {
				return err
			}
			views = append(views, view{buf: a.buf, off: slot * a.stride, size: lower.ReportBytes})
			report = &pendingReport{arena: a, slot: slot, diag: tw.diag, cell: rec.Cell}
		}
		names := tw.prog.params()
		push = make([]byte, 4*len(names))
		for i, name := range names {
			v, ok := c.params[name]
			if !ok {
				return fmt.Errorf("engine: %s: the twin takes parameter %q, which the call does not set", rec.Cell, name)
			}
			binary.LittleEndian.PutUint32(push[4*i:], v)
		}
		prog, groups = tw.prog, c.groups(tw.sched)
		rec.Kernel, rec.Tuned = tw.sched.String(), tw.tuned
		why += "; " + tw.why
	case registry.Incumbent:
		h, name, err := e.handFor(c)
		if err != nil {
			return err
		}
		if views, err = bindViews(c, h.prog.bindings(), h); err != nil {
			return err
		}
		// The manifest's grid may not ask for more work than the call's operands imply.
		bytes := 0
		for _, v := range c.operands {
			bytes += v.size
		}
		if h.launch.Module != nil {
			if err := incumbent.CheckWork(h.launch, bytes); err != nil {
				return fmt.Errorf("engine: %s (%s): %w", rec.Cell, name, err)
			}
		}
		prog, push, groups = h.prog, h.launch.Push, h.launch.Groups
		rec.Kernel = name
	}
	rec.Impl, rec.Why, rec.Groups = impl, why, groups
	if err := e.dev.dispatch(prog, views, push, groups); err != nil {
		return fmt.Errorf("engine: %s (%s): %w", rec.Cell, rec.Kernel, err)
	}
	if report != nil {
		e.reports = append(e.reports, *report)
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
func bindViews(c *call, bindings []string, h *hand) ([]view, error) {
	views := make([]view, len(bindings))
	for i, name := range bindings {
		if h != nil && h.scratch[i] != nil {
			views[i] = whole(h.scratch[i])
			continue
		}
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
				size = v.size - off
			}
			if off+size > v.size || size <= 0 {
				return nil, fmt.Errorf("engine: %s: binding %d (%s): the manifest's range [%d, %d+%d) is outside the operand's %d bytes", c.cell(), i, name, off, off, size, v.size)
			}
			v.off, v.size = v.off+off, size
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
	def := cell.DefaultScheduleFor(e.backend, e.caps)
	tw.sched, tw.tuned, tw.why = def, false, "default schedule (no tuning cache)"
	if e.opts.Tuning != nil {
		if h, err := cell.SourceHash(); err == nil {
			key := tuning.Key{Cell: cell.Name(), Backend: e.backend, Device: e.device, Driver: e.driver, TwinHash: h}
			tw.sched, tw.tuned, tw.why = kernels.ChooseSchedule(e.opts.Tuning, key, cell, def)
		}
	}
	build := cell.Build
	if e.twinBuild != nil {
		if b := e.twinBuild(cell); b != nil {
			build = b
		}
	}
	k, err := build(tw.sched).Build()
	if err != nil {
		tw.err = fmt.Errorf("engine: %s: the twin does not build at %s: %w", c.cell(), tw.sched, err)
		return tw
	}
	if e.opts.Checked {
		if caps, instrument := e.dev.(boundsChecker).checkedCaps(); instrument {
			if k, tw.diag, err = lower.RunChecked(k, caps); err != nil {
				tw.err = fmt.Errorf("engine: %s: checked mode: %w", c.cell(), err)
				return tw
			}
			tw.why += "; bounds-checked"
		}
	}
	if tw.prog, err = e.dev.compile(k); err != nil {
		tw.err = fmt.Errorf("engine: %s: %w", c.cell(), err)
		return tw
	}
	return tw
}

// handFor returns the incumbent of c's cell instantiated at c's shape. e.mu is held.
func (e *Engine) handFor(c *call) (*hand, string, error) {
	m := e.opts.Manifest
	if m == nil {
		return nil, "", fmt.Errorf("engine: %s: the registry sends the cell to its hand-written incumbent, but the engine has no incumbent manifest", c.cell())
	}
	ent := m.Entry(c.op, c.typ.String(), e.backend)
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
	l, p, err := e.dev.incumbent(ent, c.vars)
	if err != nil {
		return nil, "", fmt.Errorf("engine: %s: %w", c.cell(), err)
	}
	h := &hand{launch: l, prog: p, scratch: make([]buffer, len(l.Operands))}
	for i, n := range l.Scratch {
		if n > 0 {
			if h.scratch[i], err = e.dev.newBuffer((n + 3) &^ 3); err != nil {
				return nil, "", fmt.Errorf("engine: %s: incumbent %s scratch: %w", c.cell(), ent.Name, err)
			}
		}
	}
	e.hands[key] = h
	return h, ent.Name, nil
}

// tablesFor returns the device copies of type t's lookup tables (kernels.Tables), in binding
// order, uploading them on first use. e.mu is held.
func (e *Engine) tablesFor(t oracle.Type) ([]string, []buffer, error) {
	names, data, err := kernels.Tables(t)
	if err != nil {
		return nil, nil, err
	}
	if bufs, ok := e.tables[t]; ok {
		return names, bufs, nil
	}
	var bufs []buffer
	for i, d := range data {
		b, err := e.dev.newBuffer(max(4, (len(d)+3)&^3))
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
