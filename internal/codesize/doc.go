// Package codesize holds the test that keeps the module's functions short:
// no function or method outside tests and generated code longer than
// MaxLines lines, none taking more than MaxParams parameters (issue 23).
// The package has no code of its own; its test reads the module's source.
package codesize

// MaxLines is the longest a function may be, counted from the line of its
// func keyword to the line of its closing brace, both included.
const MaxLines = 80

// MaxParams is the most parameters a function may take (a method's
// receiver not counted).
const MaxParams = 5
