package audit

import "fmt"

// Break is the first place where a chain does not hold, as found by Verify.
type Break struct {
	Writer string // the writer whose chain breaks
	Seq    uint64 // the Seq of the record where it breaks
	Index  int    // the record's 0-based position in the input of Verify
	Reason string // what is wrong, in words
}

func (b *Break) Error() string {
	return fmt.Sprintf("record %d (writer %s, seq %d): %s", b.Index, b.Writer, b.Seq, b.Reason)
}

var _ error = (*Break)(nil)

// chain is what Verify remembers of one writer.
type chain struct {
	seq   uint64            // the newest Seq seen
	hash  string            // its Hash
	rerun uint64            // during a repeat run: the Seq expected next; 0 otherwise
	seen  map[uint64]string // Seq -> Hash of every record seen, to recognise repeats
}

// Verify checks the records, as read from a sink (oldest first), and returns
// nil or a *Break naming the first break in input order.
//
// Records are grouped by Writer. For each writer, every record's Hash must
// recompute from its contents, each Seq must be one more than the previous
// record's and each Prev must equal the previous record's Hash. The first
// record of a writer is the anchor: older records may have been trimmed from
// a bounded stream, so its Prev cannot be checked (except that seq 1 must
// have an empty Prev). Records of different writers may interleave freely.
//
// A sink write that fails after storing part of its batch is retried from
// the batch's first record, which leaves exact repeats: a run of records
// already seen (same writer, seq and hash), starting anywhere and going on
// in order up to the newest seen, after which the chain continues. Verify
// accepts such runs; Dedupe drops them for counting. A repeat that does not
// continue in order (a record replayed out of place) is a break, unless it
// is the writer's last record in the input, where it cannot be told from a
// retry cut short.
//
// Verify detects an edited field, a record deleted from the middle of a
// chain, records moved or swapped, and a forged hash that was not relinked
// into the following record. It cannot detect the loss of a writer's newest
// records, nor a chain rewritten from some point on with every hash
// recomputed: both need an anchor kept elsewhere (see the package doc).
func Verify(recs []Record) error {
	chains := make(map[string]*chain)
	for i := range recs {
		r := &recs[i]
		brk := func(format string, a ...any) error {
			return &Break{Writer: r.Writer, Seq: r.Seq, Index: i, Reason: fmt.Sprintf(format, a...)}
		}
		if r.Writer == "" {
			return brk("the record names no writer")
		}
		if r.Seq == 0 {
			return brk("seq 0: sequence numbers start at 1")
		}
		if h := r.ComputeHash(); r.Hash != h {
			return brk("hash does not match the record's contents — the record was edited or its hash forged")
		}
		c := chains[r.Writer]
		if c == nil {
			if r.Seq == 1 && r.Prev != "" {
				return brk("the first record of a chain (seq 1) has a prev hash")
			}
			chains[r.Writer] = &chain{seq: r.Seq, hash: r.Hash, seen: map[uint64]string{r.Seq: r.Hash}}
			continue
		}
		next := c.seq + 1 // the Seq expected here
		if c.rerun != 0 {
			next = c.rerun
		}
		switch {
		case r.Seq == c.seq+1 && next == r.Seq:
			if r.Prev != c.hash {
				return brk("prev hash does not match record seq %d — an edit or deletion", c.seq)
			}
			c.seq, c.hash, c.rerun = r.Seq, r.Hash, 0
			c.seen[r.Seq] = r.Hash
		case r.Seq <= c.seq && r.Seq <= next:
			// A repeat: it continues the current repeat run, or starts one.
			if h, ok := c.seen[r.Seq]; !ok || h != r.Hash {
				if r.Seq == next {
					return brk("differs from the record seq %d seen before — an edit or insertion", r.Seq)
				}
				return brk("seq %d comes after seq %d — records reordered or inserted", r.Seq, next-1)
			}
			c.rerun = r.Seq + 1
			if c.rerun == c.seq+1 {
				c.rerun = 0
			}
		case c.rerun != 0:
			return brk("seq %d follows a repeat of seq %d — a record repeated out of place (replayed or moved)", r.Seq, next-1)
		default:
			return brk("seq jumps from %d to %d — %d record(s) deleted or moved", c.seq, r.Seq, r.Seq-c.seq-1)
		}
	}
	return nil
}

// Dedupe returns recs without exact repeats (same writer, seq and hash as an
// earlier record), keeping the first of each. It does not verify anything.
func Dedupe(recs []Record) []Record {
	type key struct {
		writer string
		seq    uint64
	}
	seen := make(map[key]string, len(recs))
	out := make([]Record, 0, len(recs))
	for _, r := range recs {
		k := key{r.Writer, r.Seq}
		if h, ok := seen[k]; ok && h == r.Hash {
			continue
		}
		seen[k] = r.Hash
		out = append(out, r)
	}
	return out
}
