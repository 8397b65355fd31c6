package incumbent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Expr is a parsed shape expression: numbers, shape variables, + - * /, unary minus,
// parentheses and the functions cdiv(a, b) (ceiling division), min(a, b), max(a, b), and
// pow(a, b), log2(a), floor(a) (for fields a host derives with powf/log2f/floorf, such as
// ggml's soft_max ALiBi slopes m0, m1 and n_head_log2).
//
// An expression is evaluated in one of two modes. EvalInt (u32/i32 fields, bool spec constants,
// workgroup sizes, the grid, buffer sizes) computes in int64 with division truncating toward
// zero; a variable or literal that is not an integer is an error. EvalFloat (f32 fields and
// spec constants) computes in float64 and rounds once to float32 when stored.
type Expr struct {
	src  string
	root node
}

type node struct {
	op   byte // 'n' number, 'v' variable, '+', '-', '*', '/', 'u' (unary minus), 'f' (function)
	num  float64
	name string // variable or function name
	args []node
}

// ParseExpr parses s; the error says where the syntax breaks.
func ParseExpr(s string) (*Expr, error) {
	p := &exprParser{s: s}
	n, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, fmt.Errorf("expression %q: unexpected %q at offset %d", s, p.s[p.i:], p.i)
	}
	return &Expr{src: s, root: n}, nil
}

// String is the expression as written.
func (e *Expr) String() string { return e.src }

// Vars returns the variables the expression refers to, in order of first use.
func (e *Expr) Vars() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(n node)
	walk = func(n node) {
		if n.op == 'v' && !seen[n.name] {
			seen[n.name] = true
			out = append(out, n.name)
		}
		for _, a := range n.args {
			walk(a)
		}
	}
	walk(e.root)
	return out
}

// EvalFloat evaluates the expression in float64 over the shape variables vars.
func (e *Expr) EvalFloat(vars map[string]float64) (float64, error) {
	v, err := evalNode(e.root, vars, false)
	if err != nil {
		return 0, fmt.Errorf("expression %q: %w", e.src, err)
	}
	return v, nil
}

// EvalInt evaluates the expression in integer arithmetic over vars.
func (e *Expr) EvalInt(vars map[string]float64) (int64, error) {
	v, err := evalNode(e.root, vars, true)
	if err != nil {
		return 0, fmt.Errorf("expression %q: %w", e.src, err)
	}
	if v != math.Trunc(v) || math.IsInf(v, 0) || math.Abs(v) >= 1<<63 {
		return 0, fmt.Errorf("expression %q: %v is not an integer (wrap it in floor)", e.src, v)
	}
	return int64(v), nil
}

func evalNode(n node, vars map[string]float64, integer bool) (float64, error) {
	isInt := func(v float64) bool { return v == math.Trunc(v) && math.Abs(v) < 1<<53 }
	switch n.op {
	case 'n':
		if integer && !isInt(n.num) {
			return 0, fmt.Errorf("%v is not an integer", n.num)
		}
		return n.num, nil
	case 'v':
		v, ok := vars[n.name]
		if !ok {
			return 0, fmt.Errorf("unknown shape variable %q", n.name)
		}
		if integer && !isInt(v) {
			return 0, fmt.Errorf("shape variable %s = %v is not an integer", n.name, v)
		}
		return v, nil
	}
	args := make([]float64, len(n.args))
	for i, a := range n.args {
		v, err := evalNode(a, vars, integer)
		if err != nil {
			return 0, err
		}
		args[i] = v
	}
	switch n.op {
	case 'u':
		return -args[0], nil
	case '+':
		return args[0] + args[1], nil
	case '-':
		return args[0] - args[1], nil
	case '*':
		return args[0] * args[1], nil
	case '/':
		if integer {
			if args[1] == 0 {
				return 0, fmt.Errorf("integer division by zero")
			}
			return math.Trunc(args[0] / args[1]), nil
		}
		return args[0] / args[1], nil
	}
	switch n.name {
	case "cdiv":
		if args[1] == 0 {
			return 0, fmt.Errorf("cdiv by zero")
		}
		return math.Ceil(args[0] / args[1]), nil
	case "min":
		return math.Min(args[0], args[1]), nil
	case "max":
		return math.Max(args[0], args[1]), nil
	case "pow":
		v := math.Pow(args[0], args[1])
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("pow(%v, %v) is not finite", args[0], args[1])
		}
		return v, nil
	case "log2":
		if args[0] <= 0 {
			return 0, fmt.Errorf("log2(%v): want a positive argument", args[0])
		}
		return math.Log2(args[0]), nil
	case "floor":
		return math.Floor(args[0]), nil
	}
	return 0, fmt.Errorf("unknown function %q", n.name)
}

type exprParser struct {
	s string
	i int
}

func (p *exprParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *exprParser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *exprParser) errf(format string, args ...any) error {
	return fmt.Errorf("expression %q: %s at offset %d", p.s, fmt.Sprintf(format, args...), p.i)
}

func (p *exprParser) sum() (node, error) {
	l, err := p.product()
	if err != nil {
		return l, err
	}
	for {
		c := p.peek()
		if c != '+' && c != '-' {
			return l, nil
		}
		p.i++
		r, err := p.product()
		if err != nil {
			return r, err
		}
		l = node{op: c, args: []node{l, r}}
	}
}

func (p *exprParser) product() (node, error) {
	l, err := p.unary()
	if err != nil {
		return l, err
	}
	for {
		c := p.peek()
		if c != '*' && c != '/' {
			return l, nil
		}
		p.i++
		r, err := p.unary()
		if err != nil {
			return r, err
		}
		l = node{op: c, args: []node{l, r}}
	}
}

func (p *exprParser) unary() (node, error) {
	if p.peek() == '-' {
		p.i++
		a, err := p.unary()
		return node{op: 'u', args: []node{a}}, err
	}
	return p.primary()
}

var exprFuncs = map[string]int{"cdiv": 2, "min": 2, "max": 2, "pow": 2, "log2": 1, "floor": 1}

func (p *exprParser) primary() (node, error) {
	c := p.peek()
	switch {
	case c == 0:
		return node{}, p.errf("unexpected end")
	case c == '(':
		p.i++
		n, err := p.sum()
		if err != nil {
			return n, err
		}
		if p.peek() != ')' {
			return n, p.errf("missing )")
		}
		p.i++
		return n, nil
	case c >= '0' && c <= '9' || c == '.':
		j := p.i
		if strings.HasPrefix(p.s[j:], "0x") || strings.HasPrefix(p.s[j:], "0X") {
			j += 2
			for j < len(p.s) && strings.IndexByte("0123456789abcdefABCDEF", p.s[j]) >= 0 {
				j++
			}
		} else {
			for j < len(p.s) {
				d := p.s[j]
				if d >= '0' && d <= '9' || d == '.' || d == 'e' || d == 'E' ||
					(d == '-' || d == '+') && (p.s[j-1] == 'e' || p.s[j-1] == 'E') {
					j++
					continue
				}
				break
			}
		}
		lit := p.s[p.i:j]
		var v float64
		if u, err := strconv.ParseUint(lit, 0, 64); err == nil {
			v = float64(u)
		} else if f, err := strconv.ParseFloat(lit, 64); err == nil {
			v = f
		} else {
			return node{}, p.errf("bad number %q", lit)
		}
		p.i = j
		return node{op: 'n', num: v}, nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		j := p.i
		for j < len(p.s) && (p.s[j] == '_' || p.s[j] >= 'a' && p.s[j] <= 'z' || p.s[j] >= 'A' && p.s[j] <= 'Z' || p.s[j] >= '0' && p.s[j] <= '9') {
			j++
		}
		name := p.s[p.i:j]
		p.i = j
		if p.peek() != '(' {
			return node{op: 'v', name: name}, nil
		}
		arity, ok := exprFuncs[name]
		if !ok {
			return node{}, p.errf("unknown function %q", name)
		}
		p.i++
		var args []node
		for {
			a, err := p.sum()
			if err != nil {
				return a, err
			}
			args = append(args, a)
			if p.peek() == ',' {
				p.i++
				continue
			}
			break
		}
		if p.peek() != ')' {
			return node{}, p.errf("missing ) after the arguments of %s", name)
		}
		p.i++
		if len(args) != arity {
			return node{}, p.errf("%s takes %d arguments, got %d", name, arity, len(args))
		}
		return node{op: 'f', name: name, args: args}, nil
	}
	return node{}, p.errf("unexpected %q", string(c))
}
