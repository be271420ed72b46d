package bench_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/bench"
)

// TestCompare: medians (of an even count: the mean of the middle two),
// ranges and new/old per figure, in the order printed; a figure only one
// side has is shown with a dash, one 0 everywhere is left out.
func TestCompare(t *testing.T) {
	old, err := bench.ParseOutputs(strings.NewReader(`{"mode":"agent","n":10,"process_cpu_us_per_approval":100,"p50_ms":0,"errors":0}
{"mode":"agent","n":10,"process_cpu_us_per_approval":300,"p50_ms":0,"errors":0}

{"mode":"agent","n":10,"process_cpu_us_per_approval":200,"p50_ms":0,"errors":0}
`))
	if err != nil {
		t.Fatal(err)
	}
	new, err := bench.ParseOutputs(strings.NewReader(`{"mode":"agent","n":10,"process_cpu_us_per_approval":50,"p50_ms":2,"errors":0,"hold":5}
{"mode":"agent","n":10,"process_cpu_us_per_approval":70,"p50_ms":4,"errors":0,"hold":5}
`))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := bench.Compare(&out, old, new); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	want := []string{
		"figure old: median (range), 3 runs new: median (range), 2 runs new/old",
		"n 10 10 1.000",
		"process_cpu_us_per_approval 200 (100–300) 60 (50–70) 0.300",
		"p50_ms 0 3 (2–4) -",
		"hold - 5 -",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Compare printed\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if err := bench.Compare(&out, nil, new); err == nil {
		t.Fatal("a comparison without old runs was made")
	}
	if _, err := bench.ParseOutputs(strings.NewReader(`{"mode":["agent"]}`)); err == nil {
		t.Fatal("a nested value was read")
	}
}

// TestWriteMeasured: the runs of one command, interleaved with another's,
// make one row; each figure is the median and range of its runs, a figure
// 0 in every run a dash; the machine heads the page; a failed run is
// refused.
func TestWriteMeasured(t *testing.T) {
	in := "bot bench -mode agent -n 10\t" + `{"n":10,"tool_runs":10,"errors":0,"round_trips_per_sec":1000,"process_cpu_us_per_approval":200,"redis_cpu_us_per_approval":0}` + "\n" +
		"bot bench -mode engine -n 10\t" + `{"n":10,"tool_runs":10,"errors":0,"round_trips_per_sec":5000,"process_cpu_us_per_approval":40,"redis_cpu_us_per_approval":0}` + "\n" +
		"bot bench -mode agent -n 10\t" + `{"n":10,"tool_runs":10,"errors":0,"round_trips_per_sec":1200,"process_cpu_us_per_approval":220,"redis_cpu_us_per_approval":0}` + "\n"
	rows, err := bench.ParseRows(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m := bench.Machine{Date: "2026-11-28 15:00 UTC", Commit: "abc1234", GoVersion: "go1.26.0", CPU: "a CPU", CPUs: 2}
	if err := bench.WriteMeasured(&out, m, rows); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Building bot") {
		t.Errorf("a build not measured was written:\n%s", out.String())
	}
	out.Reset()
	m.Build = &bench.Build{Wall: 163.6, CPU: 301.2, Download: 20.4, Packages: 480, BinaryBytes: 84_123_456, Load: "0.50 0.40 0.30"}
	if err := bench.WriteMeasured(&out, m, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"(`go mod download`): 20 s\n",
		"modules already downloaded): 164 s elapsed, 301 s of CPU (user + system), at load 0.50 0.40 0.30\n",
		"(`go list -deps ./cmd/bot | wc -l`): 480\n", "- binary: 84.1 MB\n",
		"- date: 2026-11-28 15:00 UTC\n", "- commit: abc1234\n", "- machine: 2 CPUs, a CPU\n", "- Go: go1.26.0\n",
		"| `bot bench -mode agent -n 10` | 2 | 1100 (1000–1200) | - | - | 210 (200–220) | - |",
		"| `bot bench -mode engine -n 10` | 1 | 5000 | - | - | 40 | - |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("measured.md lacks %q:\n%s", want, out.String())
		}
	}
	failed, err := bench.ParseRows(strings.NewReader("bot bench\t" + `{"n":10,"tool_runs":9,"errors":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.WriteMeasured(&bytes.Buffer{}, m, failed); err == nil {
		t.Fatal("a failed run was written")
	}
	if _, err := bench.ParseRows(strings.NewReader("no tab here\n")); err == nil {
		t.Fatal("a line without a tab was read")
	}
}

// TestWriteMeasuredPeer: the peer's row (scripts/peerbench.sh) is
// compared with hitlbot's agent row on Redis of the same n, by the
// medians; without a peer row the page says why it is missing.
func TestWriteMeasuredPeer(t *testing.T) {
	in := "bot bench -mode agent -n 10 -redis $REDIS\t" + `{"n":10,"tool_runs":10,"errors":0,"round_trips_per_sec":2000,"process_cpu_us_per_approval":600}` + "\n" +
		"scripts/peerbench.sh -n 10 -redis $REDIS\t" + `{"n":10,"tool_runs":10,"errors":0,"round_trips_per_sec":250,"process_cpu_us_per_approval":6000}` + "\n"
	rows, err := bench.ParseRows(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	m := bench.Machine{Date: "2026-11-29 01:00 UTC", Commit: "abc1234", GoVersion: "go1.26.0", CPU: "a CPU", CPUs: 2}
	var out bytes.Buffer
	if err := bench.WriteMeasured(&out, m, rows); err != nil {
		t.Fatal(err)
	}
	want := "hitlbot (`bot bench -mode agent -n 10 -redis $REDIS`) against the peer (`scripts/peerbench.sh -n 10 -redis $REDIS`): 8.00× the conversations per second, 10.0× less process CPU per conversation.\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("measured.md lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	m.PeerMissing = "peerbench: node and npm are missing"
	if err := bench.WriteMeasured(&out, m, rows[:1]); err != nil {
		t.Fatal(err)
	}
	if want := "The peer (scripts/peerbench.sh) was not measured: peerbench: node and npm are missing\n"; !strings.Contains(out.String(), want) {
		t.Errorf("measured.md lacks %q:\n%s", want, out.String())
	}
}
