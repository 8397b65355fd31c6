package dsl

import (
	"reflect"
	"strings"
	"testing"
)

// callAll calls every exported method of v with zero arguments (a nil func for a callback) and
// reports those that panic.
func callAll(t *testing.T, what string, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumMethod(); i++ {
		m := v.Type().Method(i)
		if m.Name == "MustBuild" { // documented to panic on error
			continue
		}
		args := make([]reflect.Value, m.Type.NumIn()-1)
		for j := range args {
			args[j] = reflect.Zero(m.Type.In(j + 1))
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s.%s panics: %v", what, m.Name, r)
				}
			}()
			if m.Type.IsVariadic() {
				v.Method(i).CallSlice(args)
			} else {
				v.Method(i).Call(args)
			}
		}()
	}
}

// TestNilKernelNoPanic: every method of a nil *Kernel, a zero Array, a zero Value and a zero Var
// returns without panicking, and building a nil kernel is an error that says what to do.
func TestNilKernelNoPanic(t *testing.T) {
	var k *Kernel
	callAll(t, "(*Kernel)(nil)", reflect.ValueOf(k))
	callAll(t, "Array{}", reflect.ValueOf(Array{}))
	callAll(t, "Value{}", reflect.ValueOf(Value{}))
	callAll(t, "Var{}", reflect.ValueOf(Var{}))
	if _, err := k.Build(); err == nil || !strings.Contains(err.Error(), "dsl.New") {
		t.Errorf("Build of a nil kernel: %v", err)
	}
}

// TestZeroArrayIsAnError: using an Array that was never declared is an error naming the line,
// in the kernel of a Value used with it, or, with Go constants only, in the kernel being built.
func TestZeroArrayIsAnError(t *testing.T) {
	k := New("zero_store", 64)
	var undeclared Array
	i := k.GlobalID(X)
	undeclared.Store(i, 1.0) // the kernel is found through i
	if _, err := k.Build(); err == nil || !strings.Contains(err.Error(), "never declared") || !strings.Contains(err.Error(), "nil_test.go") {
		t.Errorf("Store through a zero Array with a Value index: %v", err)
	}
	k2 := New("zero_const", 64)
	undeclared.Store(3, 1.0) // constants only: an orphan mistake, reported by the kernel under construction
	if _, err := k2.Build(); err == nil || !strings.Contains(err.Error(), "never declared") {
		t.Errorf("Store through a zero Array with constants: %v", err)
	}
}

// TestBuildReportsEverything: a construction mistake and a divergent barrier are reported by one
// Build, each at its line, and reduce errors name the method as written (ReduceSum).
func TestBuildReportsEverything(t *testing.T) {
	k := New("both", 64)
	y := k.Buffer("y", F32, Write)
	i := k.GlobalID(X)
	y.Store(i, k.ReduceSum(k.Vec(k.F32(1), k.F32(2)))) // a vector: a construction mistake
	k.If(i.Lt(3), func() { k.Barrier() })              // a barrier under a divergent branch: the verifier's
	_, err := k.Build()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "ReduceSum: reduces") || !strings.Contains(msg, "barrier") {
		t.Errorf("Build reported only some of the errors:\n%s", msg)
	}
	if strings.Contains(msg, "Reducesum") {
		t.Errorf("misspelled: %s", msg)
	}
}
