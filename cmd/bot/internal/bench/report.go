package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Output is one `bot bench` JSON object as printed, its fields in their
// order: read so, an output of an older or newer bot (fields added or
// gone) is read as well as this one's.
type Output struct {
	Keys []string
	Num  map[string]float64
	Str  map[string]string
}

// ParseOutput reads one flat JSON object of numbers and strings (what
// `bot bench` prints).
func ParseOutput(b []byte) (Output, error) {
	o := Output{Num: map[string]float64{}, Str: map[string]string{}}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return o, fmt.Errorf("bench output %.40q: not a JSON object", b)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return o, fmt.Errorf("bench output: %w", err)
		}
		k, _ := t.(string)
		v, err := dec.Token()
		if err != nil {
			return o, fmt.Errorf("bench output: %w", err)
		}
		switch v := v.(type) {
		case json.Number:
			f, err := v.Float64()
			if err != nil {
				return o, fmt.Errorf("bench output: %s: %w", k, err)
			}
			o.Num[k] = f
		case string:
			o.Str[k] = v
		default:
			return o, fmt.Errorf("bench output: %s is not a number or a string", k)
		}
		o.Keys = append(o.Keys, k)
	}
	return o, nil
}

// ParseOutputs reads bench outputs, one JSON object a line (blank lines
// skipped).
func ParseOutputs(r io.Reader) ([]Output, error) {
	var out []Output
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		o, err := ParseOutput(line)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, sc.Err()
}

// spread is the median, the least and the greatest of one figure over runs.
type spread struct {
	median, lo, hi float64
	n              int
}

func spreadOf(runs []Output, key string) spread {
	var v []float64
	for _, r := range runs {
		if f, ok := r.Num[key]; ok {
			v = append(v, f)
		}
	}
	if len(v) == 0 {
		return spread{}
	}
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return spread{median: m, lo: v[0], hi: v[len(v)-1], n: len(v)}
}

// keysOf returns the numeric figures of runs, in the order the first run
// that has each printed it.
func keysOf(runs ...[]Output) []string {
	var keys []string
	for _, rs := range runs {
		for _, r := range rs {
			for _, k := range r.Keys {
				if _, num := r.Num[k]; num && !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
	}
	return keys
}

// figure formats a figure with three significant digits or more.
func figure(f float64) string {
	switch a := math.Abs(f); {
	case f == math.Trunc(f) && a < 1e15:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(f, 'f', 2, 64)
	default:
		return strconv.FormatFloat(f, 'g', 3, 64)
	}
}

func (s spread) String() string {
	switch {
	case s.n == 0:
		return "-"
	case s.lo == s.hi:
		return figure(s.median)
	default:
		return figure(s.median) + " (" + figure(s.lo) + "–" + figure(s.hi) + ")"
	}
}

// Compare writes, for each numeric figure of the runs, the median (and
// the range) of the old runs and of the new, and new ÷ old of the
// medians: what scripts/benchcmp.sh prints. A figure 0 in every run (not
// measured) is left out.
func Compare(w io.Writer, old, new []Output) error {
	if len(old) == 0 || len(new) == 0 {
		return errors.New("compare: no runs to compare")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\told: median (range), %d runs\tnew: median (range), %d runs\tnew/old\n", len(old), len(new))
	for _, k := range keysOf(old, new) {
		o, n := spreadOf(old, k), spreadOf(new, k)
		if o.lo == 0 && o.hi == 0 && n.lo == 0 && n.hi == 0 {
			continue
		}
		ratio := "-"
		if o.n > 0 && n.n > 0 && o.median != 0 {
			ratio = strconv.FormatFloat(n.median/o.median, 'f', 3, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k, o, n, ratio)
	}
	return tw.Flush()
}

// Row is one command of docs/measured.md and the outputs of its runs.
type Row struct {
	Command string
	Runs    []Output
}

// ParseRows reads the runs of `make measure`: one line per run, the
// command, a tab, and its output. Runs of one command (however
// interleaved with others) make one row, in the order the commands first
// appear.
func ParseRows(r io.Reader) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		cmd, js, ok := strings.Cut(line, "\t")
		if !ok {
			return nil, fmt.Errorf("measure rows: %.60q: want the command, a tab and the JSON", line)
		}
		o, err := ParseOutput([]byte(js))
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(rows, func(r Row) bool { return r.Command == cmd })
		if i < 0 {
			rows = append(rows, Row{Command: cmd})
			i = len(rows) - 1
		}
		rows[i].Runs = append(rows[i].Runs, o)
	}
	return rows, sc.Err()
}

// Machine is where and when docs/measured.md was measured.
type Machine struct {
	Date, Commit, GoVersion, CPU, Redis, LoadBefore, LoadAfter string
	CPUs                                                       int
	// Build is what building bot from a fresh checkout cost; nil when it
	// was not measured.
	Build *Build
	// PeerMissing is why the peer (scripts/peerbench.sh) has no row, when
	// it has none.
	PeerMissing string
}

// peerCommand is the command of the peer's rows (scripts/peerbench.sh:
// the OpenAI Agents SDK doing what `bot bench -mode agent -redis` does).
const peerCommand = "scripts/peerbench.sh "

// peerComparison is the sentence that compares each peer row with
// hitlbot's agent row on Redis of the same n: the ratios of the medians
// of conversations per second and of process CPU per conversation.
func peerComparison(rows []Row) string {
	var b strings.Builder
	for _, p := range rows {
		args, ok := strings.CutPrefix(p.Command, peerCommand)
		if !ok {
			continue
		}
		n := strings.Fields(args)
		i := slices.Index(n, "-n")
		if i < 0 || i+1 >= len(n) {
			continue
		}
		ours := "bot bench -mode agent -n " + n[i+1] + " -redis $REDIS"
		j := slices.IndexFunc(rows, func(r Row) bool { return r.Command == ours })
		if j < 0 {
			continue
		}
		rate := spreadOf(rows[j].Runs, "round_trips_per_sec").median / spreadOf(p.Runs, "round_trips_per_sec").median
		cpu := spreadOf(p.Runs, "process_cpu_us_per_approval").median / spreadOf(rows[j].Runs, "process_cpu_us_per_approval").median
		fmt.Fprintf(&b, "\nhitlbot (`%s`) against the peer (`%s`): %s× the conversations per second, %s× less process CPU per conversation.\n",
			ours, p.Command, strconv.FormatFloat(rate, 'f', 2, 64), strconv.FormatFloat(cpu, 'f', 1, 64))
	}
	return b.String()
}

// Build is the cost of a newcomer's first `make run`: compiling bot with
// an empty build cache (scripts/measure.sh), and what it compiles.
type Build struct {
	// Wall and CPU are the cold build's elapsed time and its user+system
	// CPU time, in seconds (CPU is what a machine of one core would wait).
	Wall, CPU float64
	// Download is the seconds `go mod download` took into an empty module
	// cache from the module proxy (0: not measured).
	Download float64
	// Packages is `go list -deps ./cmd/bot | wc -l`.
	Packages int
	// BinaryBytes is the size of the binary built.
	BinaryBytes int64
	// Load is the load average (1, 5, 15 min) when the build started.
	Load string
}

// measuredColumns are the figures of docs/measured.md's table: the key in
// bot bench's JSON and the column's heading. A figure 0 in every run of a
// row (not measured there) is shown as a dash.
var measuredColumns = []struct{ key, head string }{
	{"round_trips_per_sec", "approvals /s"},
	{"p50_ms", "p50 ms"},
	{"p99_ms", "p99 ms"},
	{"process_cpu_us_per_approval", "process CPU µs / approval"},
	{"redis_cpu_us_per_approval", "Redis CPU µs / approval"},
	{"redis_round_trips_per_approval", "Redis round trips / approval"},
	{"process_bytes_per_pending", "process bytes / pending"},
	{"redis_bytes_per_pending", "Redis bytes / pending"},
}

// WriteMeasured writes docs/measured.md: the machine, then one table row
// per command with the median (and range) of each figure over its runs.
func WriteMeasured(w io.Writer, m Machine, rows []Row) error {
	var b strings.Builder
	b.WriteString("# Measured\n\n")
	b.WriteString("<!-- Generated by `make measure` (scripts/measure.sh) from `bot bench`'s JSON; do not edit by hand. -->\n\n")
	b.WriteString("What one approval costs, measured by `bot bench` (see *Measured* in docs/development.md for what each mode\n")
	b.WriteString("does and what the aims are). Each figure is the median of the runs of its row, with their range in brackets;\n")
	b.WriteString("the runs of all rows are interleaved, round by round. A dash: not measured in that row.\n\n")
	fmt.Fprintf(&b, "- date: %s\n", m.Date)
	fmt.Fprintf(&b, "- commit: %s\n", m.Commit)
	fmt.Fprintf(&b, "- machine: %d CPUs, %s\n", m.CPUs, m.CPU)
	fmt.Fprintf(&b, "- Go: %s\n", m.GoVersion)
	if m.Redis != "" {
		fmt.Fprintf(&b, "- Redis: %s\n", m.Redis)
	}
	if m.LoadBefore != "" || m.LoadAfter != "" {
		fmt.Fprintf(&b, "- load average (1, 5, 15 min) before and after: %s; %s\n", m.LoadBefore, m.LoadAfter)
	}
	if bd := m.Build; bd != nil {
		b.WriteString("\nBuilding bot from a fresh checkout (a newcomer's first `make run`), with an empty build cache:\n\n")
		if bd.Download > 0 {
			fmt.Fprintf(&b, "- downloading the modules into an empty module cache (`go mod download`): %.0f s\n", bd.Download)
		}
		fmt.Fprintf(&b, "- compiling (`GOCACHE=$(mktemp -d) go build ./cmd/bot`, modules already downloaded): %.0f s elapsed, %.0f s of CPU (user + system), at load %s\n", bd.Wall, bd.CPU, bd.Load)
		fmt.Fprintf(&b, "- packages compiled (`go list -deps ./cmd/bot | wc -l`): %d\n", bd.Packages)
		fmt.Fprintf(&b, "- binary: %.1f MB\n", float64(bd.BinaryBytes)/1e6)
	}
	b.WriteString("\n| command | runs |")
	for _, c := range measuredColumns {
		b.WriteString(" " + c.head + " |")
	}
	b.WriteString("\n|---|---|")
	for range measuredColumns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %d |", strings.ReplaceAll(r.Command, "|", `\|`), len(r.Runs))
		for _, c := range measuredColumns {
			s := spreadOf(r.Runs, c.key)
			if s.lo == 0 && s.hi == 0 {
				b.WriteString(" - |")
				continue
			}
			b.WriteString(" " + s.String() + " |")
		}
		b.WriteString("\n")
		for _, o := range r.Runs {
			if o.Num["errors"] != 0 || o.Num["tool_runs"] != o.Num["n"] {
				return fmt.Errorf("measured: %s: a run had %v errors and ran the tool %v times for %v", r.Command, o.Num["errors"], o.Num["tool_runs"], o.Num["n"])
			}
		}
	}
	b.WriteString(peerComparison(rows))
	if m.PeerMissing != "" {
		fmt.Fprintf(&b, "\nThe peer (scripts/peerbench.sh) was not measured: %s\n", m.PeerMissing)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
