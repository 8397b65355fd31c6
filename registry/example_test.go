package registry_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/onesource-go/onesource/registry"
)

// gate builds the evidence a gate run on one machine would hand the registry: a bit-exact twin
// benchmarked against the incumbent with the given per-pair twin/incumbent throughput ratios.
func gate(k registry.Key, incumbent string, ratios ...float64) registry.GateResult {
	ratio := registry.SpreadOf(ratios)
	e := registry.Evidence{
		Device: "Example GPU", Driver: "1.0", Toolchain: "example",
		BitExact: true, MaxULP: 0, Cases: 12,
		TwinGBps: 100 * ratio.Median, IncumbentGBps: 100,
		Ratio:    ratio,
		TwinHash: "twin-sha256", IncumbentHash: incumbent,
		Date: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	v, reason := registry.Judge(e, registry.DefaultThreshold)
	return registry.GateResult{Key: k, Evidence: e, Verdict: v, Reason: reason}
}

// A cell flips to the DSL twin only through Apply with evidence that passes the gate; Select
// then answers which implementation serves it.
func Example() {
	r := registry.New()
	k := registry.Key{Op: "rms_norm", Type: "f32", Backend: "vulkan"}
	if err := r.Register(k, "hand-sha256", "hand-written rms_norm"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %+v\n", k, r.Select(k.Op, k.Type, k.Backend))

	g := gate(k, "hand-sha256", 0.99, 1.02, 1.01) // median 1.01 >= 0.97
	fmt.Println(g.Verdict+":", g.Reason)
	if err := r.Apply(g); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %+v\n", k, r.Select(k.Op, k.Type, k.Backend))
	// Output:
	// rms_norm/f32/vulkan: {Impl:hand State:hand TwinHash: IncumbentHash:hand-sha256}
	// flip: bit-exact on Example GPU, median ratio 1.010 >= 0.970 over 3 pairs
	// rms_norm/f32/vulkan: {Impl:twin State:dsl TwinHash:twin-sha256 IncumbentHash:hand-sha256}
}

// A bit-exact twin that is slower than the threshold is declined: the incumbent keeps serving.
// Evidence that would demote a flipped cell is refused until Revert.
func ExampleRegistry_Apply_declined() {
	r := registry.New()
	k := registry.Key{Op: "softmax", Type: "f32", Backend: "cuda"}
	if err := r.Register(k, "hand-sha256", ""); err != nil {
		fmt.Println(err)
		return
	}
	g := gate(k, "hand-sha256", 0.90, 0.93, 0.95) // median 0.93 < 0.97
	fmt.Println(g.Verdict+":", g.Reason)
	if err := r.Apply(g); err != nil {
		fmt.Println(err)
		return
	}
	c := r.Select(k.Op, k.Type, k.Backend)
	fmt.Println("serves:", c.Impl, "state:", c.State)

	// Flip it, then try to apply the slow evidence again.
	if err := r.Apply(gate(k, "hand-sha256", 1.00)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after a passing run:", r.Select(k.Op, k.Type, k.Backend).State)
	var down *registry.DowngradeError
	err := r.Apply(g)
	fmt.Println("slow run again refused:", errors.As(err, &down), "state:", r.Select(k.Op, k.Type, k.Backend).State)
	// Output:
	// decline: bit-exact on Example GPU but median ratio 0.930 < 0.970 over 3 pairs
	// serves: hand state: declined
	// after a passing run: dsl
	// slow run again refused: true state: dsl
}
