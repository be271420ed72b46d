package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

// validLines returns n JSON lines of a valid chain, without newlines.
func validLines(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for _, r := range buildChain(t, "w1", n) {
		b, err := encodeRecord(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSuffix(string(b), "\n"))
	}
	return out
}

// malformedFiles are files ReadFile must refuse; "%d" in a line stands for
// valid record number d (0-based).
var malformedFiles = []struct {
	name     string
	lines    []string
	wantLine int
}{
	{"broken JSON", []string{"%0", "%1", `{"writer":"w1","seq":`, "%2"}, 3},
	{"an unknown field", []string{"%0", `{"writer":"w1","seq":2,"extra":true}`}, 2},
	{"two records on one line", []string{"%0", "%1%2"}, 2},
	{"not an object", []string{"[1,2,3]"}, 1},
	{"a bad time", []string{"%0", `{"writer":"w1","seq":2,"time":"yesterday"}`}, 2},
	{"blank lines count", []string{"%0", "", "%1", "   ", "oops", "%2"}, 5},
	{"a cut last line", []string{"%0", "%1", `{"writer":"w1","se`}, 3},
}

func TestReadFileMalformed(t *testing.T) {
	valid := validLines(t, 3)
	for _, tc := range malformedFiles {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for _, l := range tc.lines {
				for i, v := range valid {
					l = strings.ReplaceAll(l, fmt.Sprintf("%%%d", i), v)
				}
				b.WriteString(l + "\n")
			}
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			recs, err := ReadFile(path)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("ReadFile = %d records, %v; want an *Error", len(recs), err)
			}
			if e.Line != tc.wantLine || e.Kind != errkind.Invalid {
				t.Errorf("error names line %d kind %v, want line %d kind invalid: %v", e.Line, e.Kind, tc.wantLine, err)
			}
			if want := fmt.Sprintf("%s line %d", path, tc.wantLine); !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not contain %q", err, want)
			}
		})
	}
}

func TestFileSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	chain := buildChain(t, "w1", 6)

	s, err := NewFileSink(path, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(testCtx(t), chain[:4]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(testCtx(t), chain[4:]); KindOf(err) != errkind.Closed || !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %v, want 0600", perm)
	}

	// Reopening appends.
	s, err = NewFileSink(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Write(testCtx(t), chain[4:]); err != nil {
		t.Fatal(err)
	}
	got, err := s.Read(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(chain) {
		t.Fatalf("read %d records, want %d", len(got), len(chain))
	}
	for i := range got {
		if !sameRecord(got[i], chain[i]) {
			t.Errorf("record %d differs", i)
		}
	}
	if err := Verify(got); err != nil {
		t.Errorf("Verify: %v", err)
	}
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != len(chain) {
		t.Errorf("%d lines, want %d", n, len(chain))
	}
	if _, err := NewFileSink(filepath.Join(path, "nope"), false); KindOf(err) != errkind.Unavailable {
		t.Errorf("NewFileSink under a file = %v", err)
	}
}

// Several replicas append to one bounded stream; Verify passes on what
// survives the trimming, and on the newest few.
func TestBoundedStream(t *testing.T) {
	const perWriter, maxLen = 1000, 50
	c, key := newRedis(t)
	var logs []*Log
	var wg sync.WaitGroup
	for _, w := range []string{"replica-a", "replica-b"} {
		l := NewLog(LogConfig{Writer: w, BatchSize: 32}, stepClock(), nil, NewRedisSink(c, key, maxLen))
		logs = append(logs, l)
		wg.Go(func() {
			for i := range perWriter - 1 {
				l.Append(sample(i))
			}
		})
	}
	wg.Wait()
	// Each writer's last record goes in after everything else, so that
	// both writers' newest records survive the trimming.
	for _, l := range logs {
		if err := l.Flush(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range logs {
		l.Append(sample(perWriter))
		if err := l.Close(testCtx(t)); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}

	n, err := c.XLen(testCtx(t), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n < maxLen || n >= 2*perWriter {
		t.Fatalf("stream holds %d entries, want between %d and %d (MAXLEN ~ trims whole nodes)", n, maxLen, 2*perWriter)
	}
	all, err := ReadStream(testCtx(t), c, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(all)) != n {
		t.Errorf("ReadStream returned %d records, XLEN %d", len(all), n)
	}
	if err := Verify(all); err != nil {
		t.Fatalf("Verify of the trimmed stream: %v", err)
	}
	last := map[string]uint64{}
	for _, r := range all {
		last[r.Writer] = r.Seq
	}
	if last["replica-a"] != perWriter || last["replica-b"] != perWriter {
		t.Errorf("newest seqs %v, want %d for each writer", last, perWriter)
	}
	if all[0].Seq == 1 {
		t.Errorf("the oldest record kept has seq 1: nothing was trimmed")
	}

	newest, err := ReadStream(testCtx(t), c, key, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(newest) != 10 {
		t.Fatalf("ReadStream count 10 returned %d", len(newest))
	}
	for i := range newest {
		if !sameRecord(newest[i], all[len(all)-10+i]) {
			t.Fatalf("newest[%d] is not the stream's entry %d", i, len(all)-10+i)
		}
	}
	if err := Verify(newest); err != nil {
		t.Errorf("Verify of the newest 10: %v", err)
	}
}

// ReadStream pages through a stream longer than one page.
func TestReadStreamPages(t *testing.T) {
	c, key := newRedis(t)
	s := NewRedisSink(c, key, 0)
	chain := buildChain(t, "w1", readPage+readPage/2)
	for i := 0; i < len(chain); i += 256 {
		if err := s.Write(testCtx(t), chain[i:min(i+256, len(chain))]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Read(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(chain) {
		t.Fatalf("read %d, want %d", len(got), len(chain))
	}
	if err := Verify(got); err != nil {
		t.Fatal(err)
	}
}

func TestTail(t *testing.T) {
	c, key := newRedis(t)
	s := NewRedisSink(c, key, 0)
	chain := buildChain(t, "w1", 8)
	ctx := testCtx(t)

	if recs, id, err := Tail(ctx, c, key, "$", 0); err != nil || len(recs) != 0 || id != "0-0" {
		t.Fatalf("Tail of a missing stream from $ = %d records, %q, %v", len(recs), id, err)
	}
	if err := s.Write(ctx, chain[:5]); err != nil {
		t.Fatal(err)
	}
	recs, id, err := Tail(ctx, c, key, "0", 0)
	if err != nil || len(recs) != 5 {
		t.Fatalf("Tail from 0 = %d records, %v; want 5", len(recs), err)
	}
	if recs2, id2, err := Tail(ctx, c, key, id, 0); err != nil || len(recs2) != 0 || id2 != id {
		t.Fatalf("Tail at the end = %d records, %q, %v; want none and %q", len(recs2), id2, err, id)
	}
	end, err := func() (string, error) { _, id, err := Tail(ctx, c, key, "$", 0); return id, err }()
	if err != nil || end != id {
		t.Fatalf("Tail from $ resolved to %q, %v; want %q", end, err, id)
	}

	type result struct {
		recs []Record
		err  error
	}
	done := make(chan result, 1)
	go func() {
		recs, _, err := Tail(ctx, c, key, end, 10*time.Second)
		done <- result{recs, err}
	}()
	if err := s.Write(ctx, chain[5:]); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.recs) == 0 || r.recs[0].Seq != 6 {
		t.Fatalf("blocking Tail = %d records (first seq %v), %v; want the records from seq 6", len(r.recs), seqs(r.recs), r.err)
	}
	if err := Verify(append(recs, r.recs...)); err != nil {
		t.Errorf("Verify of tailed records: %v", err)
	}
}

func TestReadStreamMalformedEntry(t *testing.T) {
	c, key := newRedis(t)
	ctx := testCtx(t)
	chain := buildChain(t, "w1", 2)
	if err := NewRedisSink(c, key, 0).Write(ctx, chain); err != nil {
		t.Fatal(err)
	}
	id, err := c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"r", `{"writer":`}}).Result()
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReadStream(ctx, c, key, 0)
	if KindOf(err) != errkind.Invalid || !strings.Contains(err.Error(), "entry "+id) {
		t.Errorf("ReadStream = %v, want an invalid-entry error naming %s", err, id)
	}
}
