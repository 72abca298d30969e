//go:build !linux

package main

import (
	"errors"
	"io"
)

// floor is Linux only: it makes the scanner's Linux system calls.
func floor([]string, io.Writer) error { return errors.New("floor: Linux only") }
