package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

// FileSink appends records to a file as JSON lines, one record per line.
// The file is opened with O_APPEND|O_CREATE and mode 0600. Use one FileSink
// per file: two processes appending to one file is not supported.
type FileSink struct {
	path  string
	fsync bool

	mu      sync.Mutex
	f       *os.File
	partial bool // a failed write left part of a line that could not be removed
}

// NewFileSink opens (creating if needed) the file at path. With fsync, each
// Write ends with fsync(2), so a written batch survives a machine crash.
func NewFileSink(path string, fsync bool) (*FileSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &Error{Op: "audit.NewFileSink", Kind: errkind.Unavailable, Where: path, Err: err}
	}
	return &FileSink{path: path, fsync: fsync, f: f}, nil
}

// Path returns the file's path.
func (s *FileSink) Path() string { return s.path }

func (s *FileSink) String() string { return "file:" + s.path }

// Write appends recs, one JSON line each, in a single write(2).
func (s *FileSink) Write(ctx context.Context, recs []Record) error {
	const op = "audit.FileSink.Write"
	if err := ctx.Err(); err != nil {
		return &Error{Op: op, Kind: errkind.Unavailable, Where: s.path, Err: err}
	}
	var buf []byte
	var err error
	for i := range recs {
		if buf, err = encodeRecord(buf, &recs[i]); err != nil {
			return &Error{Op: op, Kind: errkind.Invalid, Where: s.path, Err: err}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return &Error{Op: op, Kind: errkind.Closed, Where: s.path, Err: ErrClosed}
	}
	if s.partial {
		// End the fragment a failed write left, so that it stands alone
		// as one malformed line and the records after it stay readable.
		if _, err := s.f.Write([]byte{'\n'}); err != nil {
			return &Error{Op: op, Kind: errkind.Unavailable, Where: s.path, Err: err}
		}
		s.partial = false
	}
	var size int64 = -1
	if fi, err := s.f.Stat(); err == nil {
		size = fi.Size()
	}
	n, err := s.f.Write(buf)
	if err != nil {
		if n > 0 {
			s.undo(size, n)
		}
		return &Error{Op: op, Kind: errkind.Unavailable, Where: s.path, Err: err}
	}
	if s.fsync {
		if err := s.f.Sync(); err != nil {
			return &Error{Op: op, Kind: errkind.Unavailable, Where: s.path, Err: err}
		}
	}
	return nil
}

// undo removes the n bytes a failed write left at the end of the file, if
// they are still the last bytes (the file was size bytes long before).
func (s *FileSink) undo(size int64, n int) {
	if size >= 0 {
		if fi, err := s.f.Stat(); err == nil && fi.Size() == size+int64(n) {
			if s.f.Truncate(size) == nil {
				return
			}
		}
	}
	s.partial = true
}

// Read returns every record in the file, oldest first (see ReadFile). It
// excludes this sink's writes while it reads.
func (s *FileSink) Read(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "audit.FileSink.Read", Kind: errkind.Unavailable, Where: s.path, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return ReadFile(s.path)
}

// Close closes the file. Later writes fail with ErrClosed.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if err != nil {
		return &Error{Op: "audit.FileSink.Close", Kind: errkind.Unavailable, Where: s.path, Err: err}
	}
	return nil
}

// ReadFile reads a file of JSON lines written by FileSink, oldest first.
// Blank lines are skipped. A line that is not exactly one record (malformed
// JSON, an unknown field, trailing data) is an *Error of kind errkind.Invalid
// whose Line names it.
func ReadFile(path string) ([]Record, error) {
	const op = "audit.ReadFile"
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Op: op, Kind: errkind.Unavailable, Where: path, Err: err}
	}
	defer f.Close()
	recs, err := readRecords(f)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Op, e.Where = op, path
			return nil, e
		}
		return nil, &Error{Op: op, Kind: errkind.Unavailable, Where: path, Err: err}
	}
	return recs, nil
}

// readRecords parses JSON lines. A malformed line is an *Error with Line set.
func readRecords(r io.Reader) ([]Record, error) {
	br := bufio.NewReader(r)
	var recs []Record
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			rec, derr := decodeRecord(b)
			if derr != nil {
				return nil, &Error{Op: "audit.readRecords", Kind: errkind.Invalid, Line: line, Err: fmt.Errorf("not a record: %w", derr)}
			}
			recs = append(recs, rec)
		}
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

var (
	_ Sink   = (*FileSink)(nil)
	_ Reader = (*FileSink)(nil)
)
