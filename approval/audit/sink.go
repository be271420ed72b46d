package audit

import (
	"context"
	"slices"
	"sync"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Sink stores audit records. Log calls Write from one goroutine per sink,
// with batches in chain order; a failed Write is retried with the same
// first record, so a sink that stored part of a failed batch will see those
// records again (Verify accepts such exact repeats). Write must not keep
// recs after it returns, and must return soon after ctx ends: Log.Close
// waits for it. A Sink that implements fmt.Stringer is named by
// its String in logs.
type Sink interface {
	// Write stores the records, in order.
	Write(ctx context.Context, recs []Record) error
	// Close releases the sink. Log calls it once, after the last Write.
	Close() error
}

// Reader returns the records a sink has kept.
type Reader interface {
	// Read returns all retained records, oldest first.
	Read(ctx context.Context) ([]Record, error)
}

// MemorySink keeps records in memory. It serves tests and `bot chat`,
// where nothing outlives the process.
type MemorySink struct {
	mu   sync.Mutex
	recs []Record
}

// NewMemorySink returns an empty MemorySink.
func NewMemorySink() *MemorySink { return &MemorySink{} }

// Write appends copies of recs.
func (m *MemorySink) Write(ctx context.Context, recs []Record) error {
	if err := ctx.Err(); err != nil {
		return E("audit.MemorySink.Write", errkind.Unavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, recs...)
	return nil
}

// Read returns a copy of every record written, oldest first.
func (m *MemorySink) Read(context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs), nil
}

// Len returns how many records have been written.
func (m *MemorySink) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

// Close does nothing; the records stay readable.
func (m *MemorySink) Close() error { return nil }

func (m *MemorySink) String() string { return "memory" }

var (
	_ Sink   = (*MemorySink)(nil)
	_ Reader = (*MemorySink)(nil)
)
