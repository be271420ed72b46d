//go:build unix

package memstore_test

import (
	"syscall"
	"time"
)

// processCPU returns the user + system CPU time this process has used, or
// -1 when the system does not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
