package kernels

import (
	"fmt"
	"math"
	"math/rand"

	"github.com/onesource-go/onesource/dsl"
	"github.com/onesource-go/onesource/oracle"
)

// The subgroup cell exercises dsl.Subgroup's collectives (reductions, scans, ballot, any, all,
// broadcast) against their oracle twins (oracle.SubgroupReduce, ...). Its widest cluster is
// subgroupCellWidth lanes, so it runs on every device with subgroups of at least that many
// lanes (lavapipe has 8) and its bits are the same whatever the device's subgroup size.

const subgroupCellWidth = 8

// subgroupF32Outs and subgroupU32Outs name the output segments of the cell's two result
// buffers, in order: segment j holds the results for every element at [j*n, (j+1)*n).
var (
	subgroupF32Outs = []string{"sum8", "max8", "min4", "incl_sum8", "excl_sum8", "incl_max8", "bcast5_8", "excl_min2"}
	subgroupU32Outs = []string{"ballot8", "any4", "all8", "incl_sum_i8", "xor8", "excl_and8", "max_u4"}
)

func init() {
	Register(Cell{Op: "subgroup", Type: oracle.F32, Build: SubgroupKernel, Cases: subgroupCases,
		Feature: "dsl.Subgroup collectives"})
}

// SubgroupKernel builds the subgroup cell: invocation i (global id) takes x[i] and k[i] (0 and
// 0 past n, so every cluster is complete), runs each collective and stores its results for
// i < n. Bindings: 0 x (f32, n), 1 k (i32, n), 2 y (f32, 8n), 3 z (u32, 7n). Parameters: n
// (u32). Dispatch (ceil(n/T), 1, 1).
func SubgroupKernel(s Schedule) *dsl.Kernel {
	k := dsl.New("subgroup", s.Lanes)
	x := k.Buffer("x", dsl.F32, dsl.Read)
	ki := k.Buffer("k", dsl.I32, dsl.Read)
	y := k.Buffer("y", dsl.F32, dsl.Write)
	z := k.Buffer("z", dsl.U32, dsl.Write)
	n := k.Param("n", dsl.U32)
	i := k.GlobalID(dsl.X)
	in := i.Lt(n)
	safe := k.Select(in, i, uint32(0))
	v := k.Select(in, x.Load(safe), float32(0))
	w := k.Select(in, ki.Load(safe), int32(0))
	sg8, sg4, sg2 := k.Subgroup(8), k.Subgroup(4), k.Subgroup(2)
	fs := []dsl.Value{
		sg8.Sum(v), sg8.Max(v), sg4.Min(v),
		sg8.InclusiveSum(v), sg8.ExclusiveSum(v), sg8.InclusiveScan(dsl.OpMax, v),
		sg8.Broadcast(v, uint32(5)), sg2.ExclusiveScan(dsl.OpMin, v),
	}
	pos := v.Gt(float32(0))
	us := []dsl.Value{
		sg8.Ballot(pos),
		k.Select(sg4.Any(pos), k.U32(1), uint32(0)),
		k.Select(sg8.All(w.Ge(int32(-50))), k.U32(1), uint32(0)),
		sg8.InclusiveSum(w).Bitcast(dsl.U32),
		sg8.Reduce(dsl.OpXor, w).Bitcast(dsl.U32),
		sg8.ExclusiveScan(dsl.OpAnd, w.Bitcast(dsl.U32)),
		sg4.Max(w.Bitcast(dsl.U32)),
	}
	k.If(in, func() {
		for j, f := range fs {
			y.Store(n.Mul(uint32(j)).Add(i), f)
		}
		for j, u := range us {
			z.Store(n.Mul(uint32(j)).Add(i), u)
		}
	})
	return k
}

func subgroupCases(s Schedule) ([]Case, error) {
	rng := rand.New(rand.NewSource(116))
	var out []Case
	for _, n := range []int{1, 7, 8, 64, 1000} {
		x := make([]float32, n)
		kv := make([]int32, n)
		special := []float32{1, -2, 0.5, negZero, 3e38, 3e38, nanF, 1e-45, posInf, negInfF, -0.25, 7}
		for j := range x {
			switch {
			case n > 8 && j < len(special):
				x[j] = special[j]
			case j%5 == 0:
				x[j] = float32(rng.Intn(17) - 8)
			default:
				x[j] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(9)-4)))
			}
			kv[j] = int32(rng.Intn(200) - 60)
			if j%11 == 3 {
				kv[j] = int32(rng.Uint32())
			}
		}
		yw, zw := subgroupWant(x, kv)
		out = append(out, Case{
			Name:    fmt.Sprintf("n%d", n),
			Buffers: [][]byte{f32Bytes(x), i32Bytes(kv), make([]byte, 4*n*len(subgroupF32Outs)), make([]byte, 4*n*len(subgroupU32Outs))},
			Params:  []uint32{uint32(n)},
			Groups:  [3]uint32{uint32((n + s.Lanes - 1) / s.Lanes), 1, 1},
			Outputs: []int{2, 3},
			Want:    [][]byte{f32Bytes(yw), u32Bytes(zw)},
			Elem:    []string{"f32", "u32"},
		})
	}
	return out, nil
}

// subgroupWant is the oracle's meaning of SubgroupKernel's outputs.
func subgroupWant(x []float32, kv []int32) ([]float32, []uint32) {
	n := len(x)
	m := (n + subgroupCellWidth - 1) / subgroupCellWidth * subgroupCellWidth
	xp := make([]float32, m)
	kp := make([]int32, m)
	copy(xp, x)
	copy(kp, kv)
	ku := make([]uint32, m)
	for j := range kp {
		ku[j] = uint32(kp[j])
	}
	add := func(a, b float32) float32 { return a + b }
	addI := func(a, b int32) int32 { return a + b }
	fs := [][]float32{
		oracle.SubgroupReduce(xp, 8, add),
		oracle.SubgroupReduce(xp, 8, oracle.MaxOp),
		oracle.SubgroupReduce(xp, 4, oracle.MinOp),
		oracle.SubgroupInclusiveScan(xp, 8, add),
		oracle.SubgroupExclusiveScan(xp, 8, add, 0),
		oracle.SubgroupInclusiveScan(xp, 8, oracle.MaxOp),
		make([]float32, m),
		oracle.SubgroupExclusiveScan(xp, 2, oracle.MinOp, posInf),
	}
	for j := range xp {
		fs[6][j] = xp[j&^7+5]
	}
	bits := make([]uint32, m)
	ge := make([]uint32, m)
	for j := range xp {
		if xp[j] > 0 {
			bits[j] = 1 << (j % 8)
		}
		if kp[j] >= -50 {
			ge[j] = 1 << (j % 8)
		}
	}
	or := func(a, b uint32) uint32 { return a | b }
	ballot8 := oracle.SubgroupReduce(bits, 8, or)
	ballot4 := make([]uint32, m)
	for j := range xp {
		if xp[j] > 0 {
			ballot4[j] = 1 << (j % 4)
		}
	}
	any4 := oracle.SubgroupReduce(ballot4, 4, or)
	all8 := oracle.SubgroupReduce(ge, 8, or)
	inclI := oracle.SubgroupInclusiveScan(kp, 8, addI)
	xor8 := oracle.SubgroupReduce(kp, 8, func(a, b int32) int32 { return a ^ b })
	exclAnd := oracle.SubgroupExclusiveScan(ku, 8, func(a, b uint32) uint32 { return a & b }, math.MaxUint32)
	maxU := oracle.SubgroupReduce(ku, 4, func(a, b uint32) uint32 { return max(a, b) })
	us := make([][]uint32, len(subgroupU32Outs))
	for j := range us {
		us[j] = make([]uint32, m)
	}
	for j := range xp {
		us[0][j] = ballot8[j]
		us[1][j] = b2u(any4[j] != 0)
		us[2][j] = b2u(all8[j] == 0xff)
		us[3][j] = uint32(inclI[j])
		us[4][j] = uint32(xor8[j])
		us[5][j] = exclAnd[j]
		us[6][j] = maxU[j]
	}
	y := make([]float32, 0, n*len(fs))
	for _, f := range fs {
		y = append(y, f[:n]...)
	}
	z := make([]uint32, 0, n*len(us))
	for _, u := range us {
		z = append(z, u[:n]...)
	}
	return y, z
}

// u32Bytes returns x as little-endian bytes.
func u32Bytes(x []uint32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return b
}
