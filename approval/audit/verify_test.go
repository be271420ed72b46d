package audit

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// tamperCases change a valid chain and say what Verify must find. a is the
// chain of writer "w1" (8 records), b that of writer "w2" (5 records). A nil
// want means Verify must pass.
var tamperCases = []struct {
	name   string
	mutate func(a, b []Record) []Record
	want   *Break // Reason is matched as a substring
}{
	{
		name:   "intact",
		mutate: func(a, _ []Record) []Record { return a },
	},
	{
		name:   "edit a field",
		mutate: func(a, _ []Record) []Record { a[3].Actor = "ou_mallory"; return a },
		want:   &Break{Writer: "w1", Seq: 4, Index: 3, Reason: "hash does not match"},
	},
	{
		name:   "edit the time",
		mutate: func(a, _ []Record) []Record { a[5].Time = a[5].Time.Add(time.Second); return a },
		want:   &Break{Writer: "w1", Seq: 6, Index: 5, Reason: "hash does not match"},
	},
	{
		name:   "edit the first record",
		mutate: func(a, _ []Record) []Record { a[0].Outcome = "rejected"; return a },
		want:   &Break{Writer: "w1", Seq: 1, Index: 0, Reason: "hash does not match"},
	},
	{
		name:   "delete a middle record",
		mutate: func(a, _ []Record) []Record { return slices.Delete(a, 3, 4) },
		want:   &Break{Writer: "w1", Seq: 5, Index: 3, Reason: "seq jumps from 3 to 5"},
	},
	{
		name:   "swap two records",
		mutate: func(a, _ []Record) []Record { a[2], a[3] = a[3], a[2]; return a },
		want:   &Break{Writer: "w1", Seq: 4, Index: 2, Reason: "seq jumps from 2 to 4"},
	},
	{
		name: "recompute one hash without relinking",
		mutate: func(a, _ []Record) []Record {
			a[2].Outcome = "rejected"
			a[2].Hash = a[2].ComputeHash()
			return a
		},
		want: &Break{Writer: "w1", Seq: 4, Index: 3, Reason: "prev hash does not match record seq 3"},
	},
	{
		name: "delete a record and renumber the rest",
		mutate: func(a, _ []Record) []Record {
			a = slices.Delete(a, 3, 4)
			for i := 3; i < len(a); i++ {
				a[i].Seq--
				a[i].Hash = a[i].ComputeHash()
			}
			return a
		},
		want: &Break{Writer: "w1", Seq: 4, Index: 3, Reason: "prev hash does not match record seq 3"},
	},
	{
		name:   "forged hash",
		mutate: func(a, _ []Record) []Record { a[4].Hash = strings.Repeat("ab", 32); return a },
		want:   &Break{Writer: "w1", Seq: 5, Index: 4, Reason: "hash does not match"},
	},
	{
		name:   "truncate the head (trimmed stream)",
		mutate: func(a, _ []Record) []Record { return a[3:] },
	},
	{
		name:   "truncate the tail (not detectable without an anchor)",
		mutate: func(a, _ []Record) []Record { return a[:5] },
	},
	{
		name:   "two writers interleaved",
		mutate: func(a, b []Record) []Record { return interleave(a, b) },
	},
	{
		name: "two writers, both heads trimmed",
		mutate: func(a, b []Record) []Record {
			return interleave(a[2:], b[1:])
		},
	},
	{
		name: "two writers, edit in the second",
		mutate: func(a, b []Record) []Record {
			b[2].Tool = "shell"
			return interleave(a, b) // b[2] lands at index 5
		},
		want: &Break{Writer: "w2", Seq: 3, Index: 5, Reason: "hash does not match"},
	},
	{
		name: "two writers, delete in the second",
		mutate: func(a, b []Record) []Record {
			return interleave(a, slices.Delete(b, 1, 2)) // b's seq 3 lands at index 3
		},
		want: &Break{Writer: "w2", Seq: 3, Index: 3, Reason: "seq jumps from 1 to 3"},
	},
	{
		name: "exact repeats of a retried write",
		mutate: func(a, _ []Record) []Record {
			return slices.Concat(a[:6], a[4:6], a[4:]) // 1..6, 5 6 (failed again), 5..8
		},
	},
	{
		name: "a record replayed out of place",
		mutate: func(a, _ []Record) []Record {
			return slices.Concat(a[:6], a[1:2], a[6:]) // 1..6, 2, 7, 8
		},
		want: &Break{Writer: "w1", Seq: 7, Index: 7, Reason: "follows a repeat of seq 2"},
	},
	{
		name: "a changed copy of an earlier record",
		mutate: func(a, _ []Record) []Record {
			c := a[1]
			c.Actor = "ou_mallory"
			c.Hash = c.ComputeHash()
			return slices.Concat(a[:4], []Record{c}, a[4:])
		},
		want: &Break{Writer: "w1", Seq: 2, Index: 4, Reason: "seq 2 comes after seq 4"},
	},
	{
		name: "a record older than the anchor",
		mutate: func(a, _ []Record) []Record {
			return slices.Concat(a[3:5], a[1:2])
		},
		want: &Break{Writer: "w1", Seq: 2, Index: 2, Reason: "seq 2 comes after seq 5"},
	},
	{
		name: "first record given a prev",
		mutate: func(a, _ []Record) []Record {
			a[0].Prev = a[1].Hash
			a[0].Hash = a[0].ComputeHash()
			return a[:1]
		},
		want: &Break{Writer: "w1", Seq: 1, Index: 0, Reason: "seq 1) has a prev hash"},
	},
	{
		name:   "no writer",
		mutate: func(a, _ []Record) []Record { a[2].Writer = ""; return a },
		want:   &Break{Writer: "", Seq: 3, Index: 2, Reason: "names no writer"},
	},
}

// interleave merges a and b: a0 b0 a1 b1 …, then the rest of the longer.
func interleave(a, b []Record) []Record {
	var out []Record
	for i := 0; i < len(a) || i < len(b); i++ {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

func TestVerifyTamper(t *testing.T) {
	a0, b0 := buildChain(t, "w1", 8), buildChain(t, "w2", 5)
	for _, tc := range tamperCases {
		t.Run(tc.name, func(t *testing.T) {
			recs := tc.mutate(slices.Clone(a0), slices.Clone(b0))
			err := Verify(recs)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Verify: %v, want nil", err)
				}
				return
			}
			var b *Break
			if !errors.As(err, &b) {
				t.Fatalf("Verify = %v, want a *Break", err)
			}
			if b.Writer != tc.want.Writer || b.Seq != tc.want.Seq || b.Index != tc.want.Index ||
				!strings.Contains(b.Reason, tc.want.Reason) {
				t.Errorf("Verify = %+v, want %+v", *b, *tc.want)
			}
			if !strings.HasPrefix(err.Error(), "record ") || !strings.Contains(err.Error(), b.Reason) {
				t.Errorf("message %q does not name the record and reason", err)
			}
		})
	}
}

func TestBreakMessage(t *testing.T) {
	b := &Break{Writer: "w1", Seq: 5, Index: 17, Reason: "prev hash does not match record seq 4 — an edit or deletion"}
	want := "record 17 (writer w1, seq 5): prev hash does not match record seq 4 — an edit or deletion"
	if b.Error() != want {
		t.Errorf("Error() = %q, want %q", b.Error(), want)
	}
}

func TestDedupe(t *testing.T) {
	a := buildChain(t, "w1", 6)
	got := Dedupe(slices.Concat(a[:4], a[2:4], a[2:]))
	if want := []uint64{1, 2, 3, 4, 5, 6}; !slices.Equal(seqs(got), want) {
		t.Errorf("Dedupe seqs = %v, want %v", seqs(got), want)
	}
}

// The hash is pinned (it was recomputed independently, with Python's
// hashlib, from the encoding ComputeHash documents) so that a change of the canonical encoding (which would
// break every stored trail) cannot go unnoticed.
func TestComputeHashPinned(t *testing.T) {
	r := Record{
		Writer: "host-1-0a0b0c0d", Seq: 2, Time: time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC),
		Event: EventConfirm, ApprovalID: "ap_1", Tool: "sql", Actor: "ou_a", Prev: "00",
	}
	const want = "dd78db9893c855651a252ffb8b1365a282bb79876c32c0df26071cb2a59b199f"
	got := r.ComputeHash()
	if got != want {
		t.Logf("canonical encoding:\n%s", r.appendCanonical(nil))
		t.Errorf("ComputeHash = %s, want %s", got, want)
	}
	// The same instant in another zone hashes the same.
	r.Time = r.Time.In(time.FixedZone("CST", 8*3600))
	if r.ComputeHash() != got {
		t.Error("the hash depends on the time zone")
	}
	// A reason is encoded between error and prev (pinned the same way);
	// without one the encoding is the one above, so that records written
	// before the field existed keep their hashes.
	r.Reason = "looks right — 好"
	const withReason = "e49fd1c89064be06e29b62ba4f219d1bdfe5130a4a64186d1eba08d8f966d4fc"
	if got := r.ComputeHash(); got != withReason {
		t.Logf("canonical encoding:\n%s", r.appendCanonical(nil))
		t.Errorf("ComputeHash with a reason = %s, want %s", got, withReason)
	}
	// A grant choice comes after the reason (pinned the same way); without
	// one the encoding is the one above.
	r.Grant = "session"
	const withGrant = "2dbe818b4d2012dc8913b8de482664bd1dfd18af41d6932bb464936a305cc4bf"
	if got := r.ComputeHash(); got != withGrant {
		t.Logf("canonical encoding:\n%s", r.appendCanonical(nil))
		t.Errorf("ComputeHash with a grant = %s, want %s", got, withGrant)
	}
	// A trace id comes last before prev, written as the others are.
	r.TraceID = "0af7651916cd43dd8448eb211c80319c"
	if enc := string(r.appendCanonical(nil)); !strings.HasSuffix(enc, "grant:7:session\ntrace_id:32:0af7651916cd43dd8448eb211c80319c\nprev:2:00\n") {
		t.Errorf("canonical encoding with a trace id:\n%s", enc)
	}
	const withTrace = "3a915676505f18650d36e4c9e43adfe86ad0a787ed7cc5471050b40c2d731bed"
	if got := r.ComputeHash(); got != withTrace {
		t.Errorf("ComputeHash with a trace id = %s, want %s", got, withTrace)
	}
}

// TestVerifyReason: a chain whose records carry reasons verifies, and an
// edited, added or removed reason breaks it.
func TestVerifyReason(t *testing.T) {
	a := buildChain(t, "w", 3)
	if a[1].Reason == "" {
		t.Fatal("the sample chain has no reason")
	}
	if err := Verify(a); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for name, edit := range map[string]func(r []Record){
		"edited":  func(r []Record) { r[1].Reason = "looks wrong" },
		"removed": func(r []Record) { r[1].Reason = "" },
		"added":   func(r []Record) { r[2].Reason = "by the way" },
	} {
		c := slices.Clone(a)
		edit(c)
		var b *Break
		if err := Verify(c); !errors.As(err, &b) {
			t.Errorf("%s reason: Verify = %v, want a *Break", name, err)
		}
	}
}

// chainJSON returns the JSON lines of a small two-writer chain and its
// records keyed by writer and seq.
func chainJSON(t testing.TB) ([]byte, map[recKey]string) {
	t.Helper()
	recs := interleave(buildChain(t, "w1", 3), buildChain(t, "w2", 2))
	var buf []byte
	orig := make(map[recKey]string)
	for i := range recs {
		var err error
		if buf, err = encodeRecord(buf, &recs[i]); err != nil {
			t.Fatal(err)
		}
		orig[recKey{recs[i].Writer, recs[i].Seq}] = recs[i].Hash
	}
	return buf, orig
}

type recKey struct {
	writer string
	seq    uint64
}

// checkAccepted fails the test if Verify accepted records that are not the
// original ones, or rejected them with something other than a *Break.
func checkAccepted(t *testing.T, orig map[recKey]string, recs []Record, err error) {
	t.Helper()
	if err != nil {
		var b *Break
		if !errors.As(err, &b) {
			t.Fatalf("Verify returned %T %v, want nil or *Break", err, err)
		}
		return
	}
	for i, r := range recs {
		if h, ok := orig[recKey{r.Writer, r.Seq}]; !ok || h != r.Hash || r.ComputeHash() != h {
			t.Fatalf("Verify accepted record %d (writer %q, seq %d), which is not an original record", i, r.Writer, r.Seq)
		}
	}
}

// TestVerifyEveryByteChange changes each byte of a chain's JSON in turn: the
// result is a parse error, a *Break, or records equal to the originals.
func TestVerifyEveryByteChange(t *testing.T) {
	data, orig := chainJSON(t)
	var parsed, broken, same int
	for i := range data {
		for _, b := range []byte{data[i] ^ 0x01, data[i] ^ 0x20} {
			m := bytes.Clone(data)
			m[i] = b
			recs, err := readRecords(bytes.NewReader(m))
			if err != nil {
				continue
			}
			parsed++
			verr := Verify(recs)
			checkAccepted(t, orig, recs, verr)
			if verr != nil {
				broken++
			} else {
				same++
				if len(recs) != len(orig) {
					t.Fatalf("byte %d -> %q: Verify accepted %d records, want %d", i, b, len(recs), len(orig))
				}
			}
		}
	}
	t.Logf("%d bytes, %d mutations parsed: %d broke the chain, %d left it the same (e.g. key case)", len(data), parsed, broken, same)
	if broken == 0 {
		t.Fatal("no mutation was detected")
	}
}

// FuzzVerify: whatever the input, Verify does not panic, returns nil or a
// *Break, and accepts only records of the original chain.
func FuzzVerify(f *testing.F) {
	data, orig := chainJSON(f)
	f.Add(data)
	lines := bytes.SplitAfter(data, []byte("\n"))
	f.Add(bytes.Join([][]byte{lines[1], lines[0], lines[2]}, nil))
	f.Add(bytes.Join(lines[2:], nil))
	f.Add(bytes.Replace(data, []byte(`"tool":"sql"`), []byte(`"tool":"shell"`), 1))
	f.Add([]byte(`{"writer":"w","seq":1,"time":"2026-01-01T00:00:00Z","event":"confirm","approval_id":"a","prev":"","hash":""}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, err := readRecords(bytes.NewReader(in))
		if err != nil {
			return
		}
		checkAccepted(t, orig, recs, Verify(recs))
	})
}
