// Package apidoc holds the test that keeps the public API documented: it walks every public
// package of the module (everything outside directories named internal or testdata, except
// package main) and fails for each package without a package doc comment and for each exported
// top-level func, type, const or var, and each exported method of an exported type, that has no
// doc comment. A const or var in a parenthesized group counts as documented when the group, the
// spec, or the spec's trailing line comment has one; a type in a group counts when the group or
// the spec has one. Struct fields and interface methods are not checked. The package has no
// non-test code. TestGoVet runs `go vet ./...` over the module.
package apidoc
