package cfamily

import (
	"fmt"
	"sort"
	"strings"

	"github.com/onesource-go/onesource/ir"
)

// The os_* helpers, in the order they are printed. Each is written once per family: %[1]s is
// the dialect's HelperQual.
var cudaHelpers = []struct{ name, text string }{
	{"os_div_i32", "%[1]s int os_div_i32(int a, int b) { return b == 0 ? -1 : b == -1 ? (int)(0u - (unsigned int)a) : a / b; }"},
	{"os_rem_i32", "%[1]s int os_rem_i32(int a, int b) { return b == 0 ? a : b == -1 ? 0 : a %% b; }"},
	{"os_div_u32", "%[1]s unsigned int os_div_u32(unsigned int a, unsigned int b) { return b == 0u ? 0xffffffffu : a / b; }"},
	{"os_rem_u32", "%[1]s unsigned int os_rem_u32(unsigned int a, unsigned int b) { return b == 0u ? a : a %% b; }"},
	{"os_f32_to_i32", "%[1]s int os_f32_to_i32(float x) { return x >= -2147483648.0f && x < 2147483648.0f ? (int)x : (-2147483647 - 1); }"},
	{"os_f32_to_u32", "%[1]s unsigned int os_f32_to_u32(float x) { return x > -1.0f && x < 4294967296.0f ? (unsigned int)x : 0x80000000u; }"},
	{"os_f64_to_i32", "%[1]s int os_f64_to_i32(double x) { return x > -2147483649.0 && x < 2147483648.0 ? (int)x : (-2147483647 - 1); }"},
	{"os_f64_to_u32", "%[1]s unsigned int os_f64_to_u32(double x) { return x > -1.0 && x < 4294967296.0 ? (unsigned int)x : 0x80000000u; }"},
	{"os_bitcast", "template <typename To, typename From>\n%[1]s To os_bitcast(From x) {\n\tstatic_assert(sizeof(To) == sizeof(From), \"os_bitcast: sizes differ\");\n\tTo t;\n\t__builtin_memcpy(&t, &x, sizeof(To));\n\treturn t;\n}"},
}

var metalHelpers = []struct{ name, text string }{
	{"os_div_i32", "%[1]s int os_div_i32(int a, int b) { return b == 0 ? -1 : b == -1 ? int(0u - uint(a)) : a / b; }"},
	{"os_rem_i32", "%[1]s int os_rem_i32(int a, int b) { return b == 0 ? a : b == -1 ? 0 : a %% b; }"},
	{"os_div_u32", "%[1]s uint os_div_u32(uint a, uint b) { return b == 0u ? 0xffffffffu : a / b; }"},
	{"os_rem_u32", "%[1]s uint os_rem_u32(uint a, uint b) { return b == 0u ? a : a %% b; }"},
	{"os_f32_to_i32", "%[1]s int os_f32_to_i32(float x) { return x >= -2147483648.0f && x < 2147483648.0f ? int(x) : (-2147483647 - 1); }"},
	{"os_f32_to_u32", "%[1]s uint os_f32_to_u32(float x) { return x > -1.0f && x < 4294967296.0f ? uint(x) : 0x80000000u; }"},
}

// HelperNames lists the os_* helper functions the printer may call, in printing order.
func HelperNames() []string {
	var s []string
	for _, h := range cudaHelpers {
		s = append(s, h.name)
	}
	return s
}

// helpers writes the os_* helpers the kernel uses.
func (p *printer) helpers(out *strings.Builder) {
	list := cudaHelpers
	if !p.cuda {
		list = metalHelpers
	}
	n := 0
	for _, h := range list {
		if p.uses.Names[h.name] {
			fmt.Fprintf(out, h.text+"\n", p.d.HelperQual)
			n++
		}
	}
	if n > 0 {
		out.WriteByte('\n')
	}
}

// vectorStructs writes the FamilyCUDA vector structs the kernel uses. 32-bit vectors are aligned
// as std430 lays them out (8 bytes for 2 lanes, 16 for 3 and 4), so buffers of them match
// Vulkan's.
func (p *printer) vectorStructs(out *strings.Builder) {
	var names []string
	for n := range p.vecs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := p.vecs[n]
		elem, _ := p.scalarName(t.Scalar)
		align := ""
		if t.Scalar.Bits() == 32 && t.Scalar != ir.Bool {
			a := 16
			if t.Lanes == 2 {
				a = 8
			}
			align = fmt.Sprintf("alignas(%d) ", a)
		}
		fmt.Fprintf(out, "struct %s%s { %s v[%d]; };\n", align, n, elem, t.Lanes)
	}
	if len(names) > 0 {
		out.WriteByte('\n')
	}
}
