package llama

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/onesource-go/onesource/engine"
)

// ProfileRow is one line of a profile: the calls of one cell by one kernel (ByCell) or of one
// role in the step (ByRole: "attn_q", "ffn_down", ... summed over the layers).
type ProfileRow struct {
	Name        string        // the cell ("matvec/q4_0/vulkan") or the role
	Served      string        // "twin lanes=64,blocked (tuned)", "hand hand_add_f32"; several joined by "; "
	State       string        // the registry state ("" without an entry)
	Calls       int           // per step
	Time        time.Duration // device time per step
	Share       float64       // of the step's device time, percent
	GBps        float64       // the calls' minimal traffic per second of device time
	RooflinePct float64       // GBps against the copy bandwidth
}

// Profile is where a decode step's time goes.
type Profile struct {
	Steps       int
	StepTime    time.Duration // device time per step (the sum of its dispatches)
	WallTime    time.Duration // wall time per step, submission and host work included
	RooflineGBs float64       // the device's copy bandwidth
	Device      string
	ByCell      []ProfileRow
	ByRole      []ProfileRow
}

var layerPrefix = regexp.MustCompile(`^blk\.\d+\.`)

// ProfileModel runs a warm-up step and then steps measured decode steps of m from position 0
// (token 1, then greedy), and aggregates the engine's trace. m's engine must be timed
// (engine.Options.Timed).
func ProfileModel(m *Model, steps int) (*Profile, error) {
	e := m.e
	if !e.Timed() {
		return nil, errors.New("llama: profile: the engine does not time its calls (open it with engine.Options.Timed)")
	}
	if steps < 1 {
		return nil, errors.New("llama: profile: steps must be at least 1")
	}
	if steps+1 > m.Ctx {
		return nil, fmt.Errorf("llama: profile: %d steps do not fit the KV cache's %d positions", steps, m.Ctx)
	}
	roof, err := e.CopyBandwidth()
	if err != nil {
		return nil, err
	}
	logits, err := m.Step(1, 0) // warm-up: pipelines compiled, descriptor sets made
	if err != nil {
		return nil, err
	}
	e.ResetTrace()
	start := time.Now()
	for i := 0; i < steps; i++ {
		if logits, err = m.Step(Argmax(logits), i+1); err != nil {
			return nil, err
		}
	}
	wall := time.Since(start)
	p := &Profile{Steps: steps, WallTime: wall / time.Duration(steps), RooflineGBs: roof, Device: e.Device().Name}
	type agg struct {
		row    ProfileRow
		bytes  int64
		served map[string]bool
	}
	byCell, byRole := map[string]*agg{}, map[string]*agg{}
	var total time.Duration
	add := func(m map[string]*agg, key string, c engine.Call, served string) {
		a, ok := m[key]
		if !ok {
			a = &agg{row: ProfileRow{Name: key, State: string(c.State)}, served: map[string]bool{}}
			m[key] = a
		}
		a.row.Calls++
		a.row.Time += c.Time
		a.bytes += int64(c.Bytes)
		a.served[served] = true
	}
	for _, c := range e.Trace() {
		if !c.Flushed {
			continue
		}
		served := string(c.Impl) + " " + c.Kernel
		if c.Tuned {
			served += " (tuned)"
		}
		total += c.Time
		add(byCell, c.Cell, c, served)
		add(byRole, layerPrefix.ReplaceAllString(c.Label, ""), c, c.Cell+" "+served)
	}
	p.StepTime = total / time.Duration(steps)
	rows := func(m map[string]*agg) []ProfileRow {
		var out []ProfileRow
		for _, a := range m {
			r := a.row
			var s []string
			for k := range a.served {
				s = append(s, k)
			}
			sort.Strings(s)
			r.Served = strings.Join(s, "; ")
			if r.Time > 0 {
				r.GBps = float64(a.bytes) / r.Time.Seconds() / 1e9
			}
			if p.RooflineGBs > 0 {
				r.RooflinePct = 100 * r.GBps / p.RooflineGBs
			}
			if total > 0 {
				r.Share = 100 * float64(r.Time) / float64(total)
			}
			r.Calls /= steps
			r.Time /= time.Duration(steps)
			out = append(out, r)
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Time != out[j].Time {
				return out[i].Time > out[j].Time
			}
			return out[i].Name < out[j].Name
		})
		return out
	}
	p.ByCell, p.ByRole = rows(byCell), rows(byRole)
	return p, nil
}

// Write prints the profile: the step, then the time by cell (who served it, its registry
// state) and by role in the step, most expensive first.
func (p *Profile) Write(w io.Writer) {
	fmt.Fprintf(w, "decode step on %s: %.3f ms of device time (%.3f ms wall), over %d steps; copy roofline %.2f GB/s\n\n",
		p.Device, ms(p.StepTime), ms(p.WallTime), p.Steps, p.RooflineGBs)
	table := func(title string, rows []ProfileRow, state bool) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		head := title + "\tcalls\tms/step\tshare %\tGB/s\troofline %\tserved by"
		if state {
			head += "\tregistry"
		}
		fmt.Fprintln(tw, head)
		for _, r := range rows {
			line := fmt.Sprintf("%s\t%d\t%.3f\t%.1f\t%.2f\t%.1f\t%s", r.Name, r.Calls, ms(r.Time), r.Share, r.GBps, r.RooflinePct, r.Served)
			if state {
				st := r.State
				if st == "" {
					st = "(none)"
				}
				line += "\t" + st
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	table("cell", p.ByCell, true)
	table("role", p.ByRole, false)
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
