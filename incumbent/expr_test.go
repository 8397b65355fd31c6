package incumbent

import (
	"strings"
	"testing"
)

func TestExprConditions(t *testing.T) {
	vars := map[string]float64{"n": 4096, "rows": 512, "heads": 6, "eps": 1e-6, "zero": 0}
	for _, c := range []struct {
		src  string
		i    int64   // EvalInt
		f    float64 // EvalFloat
		ierr string  // EvalInt fails with this instead
	}{
		// Comparisons yield 1 or 0.
		{src: "n <= 4096", i: 1, f: 1},
		{src: "n < 4096", i: 0, f: 0},
		{src: "n > 4095", i: 1, f: 1},
		{src: "n >= 4097", i: 0, f: 0},
		{src: "rows == 512", i: 1, f: 1},
		{src: "rows != 512", i: 0, f: 0},
		// Logical operators: operands true when not zero, results 1 or 0.
		{src: "!0", i: 1, f: 1},
		{src: "!rows", i: 0, f: 0},
		{src: "!!heads", i: 1, f: 1},
		{src: "rows && heads", i: 1, f: 1},
		{src: "rows && zero", i: 0, f: 0},
		{src: "zero || heads", i: 1, f: 1},
		{src: "zero || zero", i: 0, f: 0},
		// The conditional.
		{src: "n <= 4096 ? 1 : 2", i: 1, f: 1},
		{src: "n > 4096 ? 1 : 2", i: 2, f: 2},
		{src: "rows ? n : -n", i: 4096, f: 4096},
		// C precedence: ?: < || < && < == != < relational < + - < * / % < unary.
		{src: "1 + 2 < 4", i: 1, f: 1},                            // (1+2) < 4
		{src: "1 < 2 == 2 < 3", i: 1, f: 1},                       // (1<2) == (2<3)
		{src: "0 && 0 || 1", i: 1, f: 1},                          // (0&&0) || 1
		{src: "1 || 0 && 0", i: 1, f: 1},                          // 1 || (0&&0)
		{src: "rows == 512 && n % 256 == 0", i: 1, f: 1},          // (rows==512) && ((n%256)==0)
		{src: "0 ? 1 : 0 ? 2 : 3", i: 3, f: 3},                    // right-associative: 0 ? 1 : (0 ? 2 : 3)
		{src: "1 ? 2 : 3 + 10", i: 2, f: 2},                       // 1 ? 2 : (3+10)
		{src: "(1 ? 2 : 3) + 10", i: 12, f: 12},                   // parentheses
		{src: "1 ? 0 ? 4 : 5 : 6", i: 5, f: 5},                    // the middle operand is a full conditional
		{src: "-1 < 0", i: 1, f: 1},                               // unary minus binds tightest
		{src: "!0 + 1", i: 2, f: 2},                               // (!0) + 1
		{src: "2 * 3 % 4", i: 2, f: 2},                            // (2*3) % 4
		{src: "min(n, rows > 100 ? 1024 : 64)", i: 1024, f: 1024}, // conditions inside function arguments
		// %: truncated remainder, as in C, in both modes.
		{src: "n % 1000", i: 96, f: 96},
		{src: "-7 % 3", i: -1, f: -1},
		{src: "7 % -3", i: 1, f: 1},
		// A float condition in float mode; in integer mode a non-integer is still an error.
		{src: "eps < 1e-5 ? 1 : 2", f: 1, ierr: "not an integer"},
		// Evaluation is lazy: the branch, or operand, not taken is not evaluated.
		{src: "zero > 0 ? n / zero : 7", i: 7, f: 7},
		{src: "zero != 0 && n / zero > 1", i: 0, f: 0},
		{src: "zero == 0 || n % zero", i: 1, f: 1},
		{src: "rows ? 3 : eps", i: 3, f: 3},
		{src: "rows ? 3 : unknown_var", i: 3, f: 3},
		// Errors still surface where evaluated.
		{src: "n % zero", ierr: "modulo by zero"},
		{src: "zero ? 1 : unknown_var", ierr: `unknown shape variable "unknown_var"`},
	} {
		x, err := ParseExpr(c.src)
		if err != nil {
			t.Errorf("ParseExpr(%q): %v", c.src, err)
			continue
		}
		i, err := x.EvalInt(vars)
		switch {
		case c.ierr != "" && (err == nil || !strings.Contains(err.Error(), c.ierr)):
			t.Errorf("EvalInt(%s) = %d, %v; want an error containing %q", c.src, i, err, c.ierr)
		case c.ierr == "" && (err != nil || i != c.i):
			t.Errorf("EvalInt(%s) = %d, %v; want %d", c.src, i, err, c.i)
		}
		if c.ierr != "" && c.f == 0 {
			continue
		}
		if f, err := x.EvalFloat(vars); err != nil || f != c.f {
			t.Errorf("EvalFloat(%s) = %v, %v; want %v", c.src, f, err, c.f)
		}
	}
}

func TestExprConditionSyntax(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"n = 4", "= is not an operator (compare with ==)"},
		{"n & 1", "no bitwise operators"},
		{"n | 1", "no bitwise operators"},
		{"n << 2", "no shift operators"},
		{"n >> 2", "no shift operators"},
		{"n ? 1", "missing : of the conditional"},
		{"n ? : 1", "unexpected \":\""},
		{"? 1 : 2", "unexpected \"?\""},
		{"!= 3", "unexpected !="},
		{"n <", "unexpected end"},
		{"n && ", "unexpected end"},
		{"1 : 2", `unexpected ": 2"`},
		{"n === 4", "unexpected \"=\""},
	} {
		_, err := ParseExpr(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseExpr(%q): %v, want an error containing %q", c.src, err, c.want)
		}
	}
	// Vars sees both branches of a conditional.
	if got := strings.Join(mustExpr(t, "a > 1 ? b : c && !d").Vars(), ","); got != "a,b,c,d" {
		t.Errorf("Vars = %s", got)
	}
}
