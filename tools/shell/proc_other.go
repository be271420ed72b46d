//go:build !unix

package shell

import "os/exec"

// isolate is a no-op where process groups do not exist: cancelling kills
// the process only (exec's default).
func isolate(*exec.Cmd) {}

// killGroup does nothing where process groups do not exist.
func killGroup(*exec.Cmd) {}
