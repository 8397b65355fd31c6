package dsl_test

import (
	"fmt"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// A block-wide inclusive prefix sum of 64 values per workgroup with subgroup scans: each
// cluster of 8 lanes scans its values, publishes its total, then every cluster scans the 8
// totals and each lane adds its cluster's offset. The clusters are 8 lanes wide whatever the
// device's subgroup size, so the bits are the same everywhere (the oracle twins are
// oracle.SubgroupInclusiveScan and oracle.SubgroupExclusiveScan); a target whose subgroups are
// narrower than 8 lanes refuses the kernel.
func ExampleKernel_Subgroup() {
	k := dsl.New("block_prefix_sum", 64)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	totals := k.Shared("totals", dsl.F32, 8)
	sg := k.Subgroup(8)
	i := k.GlobalID(dsl.X)
	cluster := k.LocalIndex().Div(8)
	incl := sg.InclusiveSum(x.Load(i))
	k.If(sg.Lane().Eq(7), func() { totals.Store(cluster, incl) })
	k.Barrier()
	off := sg.ExclusiveSum(totals.Load(sg.Lane()))
	y.Store(i, sg.Broadcast(off, cluster).Add(incl))

	built, err := k.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(built.Name, "needs subgroups of at least", lower.MinSubgroup(built), "lanes")
	_, err = lower.Run(built, lower.Caps{SubgroupSize: 4})
	fmt.Println(err != nil)
	// Output:
	// block_prefix_sum needs subgroups of at least 8 lanes
	// true
}

// A weighted histogram with f32 atomic adds. Where the target has no native float atomics,
// the lowering turns each add into a compare-exchange loop on the same bytes. The adds land in
// an order the device chooses, so the totals are reproducible when every partial sum is exact
// (counts, or small multiples of a power of two).
func ExampleArray_AtomicAdd() {
	k := dsl.New("histogram", 64)
	key := k.Buffer("key", dsl.U32, dsl.Read)
	w := k.Buffer("w", dsl.F32, dsl.Read)
	hist := k.Buffer("hist", dsl.F32, dsl.ReadWrite)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	k.If(i.Lt(n), func() { hist.AtomicAdd(key.Load(i).And(63), w.Load(i)) })
	built := k.MustBuild()

	for _, c := range []lower.Caps{{AtomicFloatAdd: true}, {}} {
		l, err := lower.Run(built, c)
		if err != nil {
			fmt.Println(err)
			return
		}
		counts := map[string]int{}
		ir.Walk(l.Body, func(in *ir.Inst) bool {
			if in.Op == ir.OpAtomic {
				counts[fmt.Sprintf("%s.%s", ir.AtomicOp(in.Aux), in.Type)]++
			}
			return true
		})
		fmt.Println("native float atomics:", c.AtomicFloatAdd, counts, "hist holds", l.Buffers[2].Elem)
	}
	// Output:
	// native float atomics: true map[add.f32:1] hist holds f32
	// native float atomics: false map[cmpxchg.u32:1 or.u32:1] hist holds u32
}
