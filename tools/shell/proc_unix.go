//go:build unix

package shell

import (
	"os/exec"
	"syscall"
)

// isolate starts the command in a process group of its own, and makes
// cancelling it (the timeout) kill that whole group, so children the
// command started die with it.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// killGroup kills what is left of the command's process group once the
// command itself has exited (and been reaped): nothing a run starts
// outlives it. The kernel does not reuse a pid while a process group of
// that id has members; an empty group gets ESRCH, and the id could only
// name a stranger's group after the pid space wrapped in the meantime.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
