package incumbent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Expr is a parsed shape expression: numbers, shape variables, + - * / %, unary minus,
// parentheses and the functions cdiv(a, b) (ceiling division), min(a, b), max(a, b), and
// pow(a, b), log2(a), floor(a) (for fields a host derives with powf/log2f/floorf, such as
// ggml's soft_max ALiBi slopes m0, m1 and n_head_log2); and conditions: the comparisons
// < <= > >= == != (1 when true, 0 when false), logical ! && || (operands are true when not
// zero; the result is 1 or 0) and the conditional c ? a : b. Precedence and associativity are
// C's, from loosest to tightest: ?: (right-associative), ||, &&, == !=, < <= > >=, + -, * / %,
// then the unary - and !. &&, || and ?: evaluate only the operands they need, so
// "n > 0 ? m / n : 0" does not divide by zero. For example "n <= 4096 ? 1 : 2",
// "n % 256 == 0 && rows >= 64", "min(n, 1024)".
//
// An expression is evaluated in one of two modes. EvalInt (u32/i32 fields, bool spec constants,
// workgroup sizes, the grid, buffer sizes and offsets) computes in int64 with division and %
// truncating toward zero (as in C); a variable or literal that is not an integer is an error.
// EvalFloat (f32 fields and spec constants, a variant's "when") computes in float64 and rounds
// once to float32 when stored; there % is the remainder of truncated division (math.Mod).
type Expr struct {
	src  string
	root node
}

type node struct {
	// op: 'n' number, 'v' variable, '+', '-', '*', '/', '%', 'u' (unary minus), '!' (not),
	// 'f' (function), '<', 'L' (<=), '>', 'G' (>=), 'E' (==), 'N' (!=), '&' (&&), '|' (||),
	// '?' (conditional: args are the condition and the two branches).
	op   byte
	num  float64
	name string // variable or function name
	args []node
}

// ParseExpr parses s; the error says where the syntax breaks.
func ParseExpr(s string) (*Expr, error) {
	p := &exprParser{s: s}
	n, err := p.expr()
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

// UnknownVarError is an expression's use of a variable its caller does not set: a shape
// variable the cell's workload does not have (`onesource cells -vars OP/TYPE` lists those it has).
type UnknownVarError struct{ Name string }

// Error says which variable is unknown.
func (e *UnknownVarError) Error() string { return fmt.Sprintf("unknown shape variable %q", e.Name) }

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
			return 0, &UnknownVarError{Name: n.name}
		}
		if integer && !isInt(v) {
			return 0, fmt.Errorf("shape variable %s = %v is not an integer", n.name, v)
		}
		return v, nil
	case '?', '&', '|':
		c, err := evalNode(n.args[0], vars, integer)
		if err != nil {
			return 0, err
		}
		switch {
		case n.op == '?' && c != 0:
			return evalNode(n.args[1], vars, integer)
		case n.op == '?':
			return evalNode(n.args[2], vars, integer)
		case n.op == '&' && c == 0, n.op == '|' && c != 0:
			return truth(n.op == '|'), nil
		}
		r, err := evalNode(n.args[1], vars, integer)
		return truth(r != 0), err
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
	case '!':
		return truth(args[0] == 0), nil
	case '<':
		return truth(args[0] < args[1]), nil
	case 'L':
		return truth(args[0] <= args[1]), nil
	case '>':
		return truth(args[0] > args[1]), nil
	case 'G':
		return truth(args[0] >= args[1]), nil
	case 'E':
		return truth(args[0] == args[1]), nil
	case 'N':
		return truth(args[0] != args[1]), nil
	case '%':
		if args[1] == 0 {
			return 0, fmt.Errorf("modulo by zero")
		}
		return math.Mod(args[0], args[1]), nil
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

// truth is a condition's value: 1 or 0.
func truth(b bool) float64 {
	if b {
		return 1
	}
	return 0
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

// match consumes tok when the input continues with it (after spaces), unless it continues with
// tok followed by one of the bytes in not (so "<" does not match "<=").
func (p *exprParser) match(tok, not string) bool {
	p.space()
	if !strings.HasPrefix(p.s[p.i:], tok) {
		return false
	}
	if j := p.i + len(tok); j < len(p.s) && strings.IndexByte(not, p.s[j]) >= 0 {
		return false
	}
	p.i += len(tok)
	return true
}

// expr is the loosest level: the conditional c ? a : b (right-associative).
func (p *exprParser) expr() (node, error) {
	c, err := p.or()
	if err != nil {
		return c, err
	}
	if !p.match("?", "") {
		return c, nil
	}
	a, err := p.expr()
	if err != nil {
		return a, err
	}
	if !p.match(":", "") {
		return a, p.errf("missing : of the conditional")
	}
	b, err := p.expr()
	if err != nil {
		return b, err
	}
	return node{op: '?', args: []node{c, a, b}}, nil
}

func (p *exprParser) or() (node, error) {
	l, err := p.and()
	for err == nil && p.match("||", "") {
		var r node
		r, err = p.and()
		l = node{op: '|', args: []node{l, r}}
	}
	return l, err
}

func (p *exprParser) and() (node, error) {
	l, err := p.equality()
	for err == nil && p.match("&&", "") {
		var r node
		r, err = p.equality()
		l = node{op: '&', args: []node{l, r}}
	}
	return l, err
}

func (p *exprParser) equality() (node, error) {
	l, err := p.relational()
	for err == nil {
		var op byte
		switch {
		case p.match("==", ""):
			op = 'E'
		case p.match("!=", ""):
			op = 'N'
		default:
			return l, p.stray()
		}
		var r node
		r, err = p.relational()
		l = node{op: op, args: []node{l, r}}
	}
	return l, err
}

func (p *exprParser) relational() (node, error) {
	l, err := p.sum()
	for err == nil {
		var op byte
		switch {
		case p.match("<=", ""):
			op = 'L'
		case p.match(">=", ""):
			op = 'G'
		case p.match("<", "<"):
			op = '<'
		case p.match(">", ">"):
			op = '>'
		default:
			return l, nil
		}
		var r node
		r, err = p.sum()
		l = node{op: op, args: []node{l, r}}
	}
	return l, err
}

// stray reports an operator this grammar lacks where a binary operator could stand, with what
// to write instead; nil otherwise.
func (p *exprParser) stray() error {
	rest := p.s[p.i:]
	switch {
	case strings.HasPrefix(rest, "="):
		return p.errf("= is not an operator (compare with ==)")
	case strings.HasPrefix(rest, "&") && !strings.HasPrefix(rest, "&&"),
		strings.HasPrefix(rest, "|") && !strings.HasPrefix(rest, "||"):
		return p.errf("%q: no bitwise operators (the logical ones are && and ||)", rest[:1])
	case strings.HasPrefix(rest, "<<"), strings.HasPrefix(rest, ">>"):
		return p.errf("%q: no shift operators (multiply or divide by pow(2, k))", rest[:2])
	}
	return nil
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
		if c != '*' && c != '/' && c != '%' {
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
	switch p.peek() {
	case '-':
		p.i++
		a, err := p.unary()
		return node{op: 'u', args: []node{a}}, err
	case '!':
		if strings.HasPrefix(p.s[p.i:], "!=") {
			return node{}, p.errf("unexpected !=")
		}
		p.i++
		a, err := p.unary()
		return node{op: '!', args: []node{a}}, err
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
		n, err := p.expr()
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
			a, err := p.expr()
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
