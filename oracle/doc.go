// Package oracle is the independent plain-Go reference of onesource: it defines, bit for bit, what
// every GGUF block format and every op means. Every backend is judged against it.
//
// It imports none of dsl, ir or backends, so it stays an independent judge.
package oracle
