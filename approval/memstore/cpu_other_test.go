//go:build !unix

package memstore_test

import "time"

// processCPU returns -1: this system's process CPU time is not read.
func processCPU() time.Duration { return -1 }
