// Package ir is onesource's typed, structured intermediate representation: a Kernel holds its
// resources (storage buffers, scalar parameters, shared arrays, private variables) and a body of
// instructions whose control flow is structured (if/else, loops with a continuing block, break,
// continue, return), so every backend can print it without rebuilding structure.
//
// Values are instructions: an instruction with a result is referred to by pointer from the
// operands of later instructions and is visible only after it in its own block and in the
// blocks nested there. Verify checks types, scoping, access modes and the visible cases of
// barriers in non-uniform control flow; every error carries the Go source position the dsl
// builder recorded. Kernel.String is a stable text form used by golden tests.
//
// The IR is built by package dsl, rewritten by package lower and read by the backends.
package ir
