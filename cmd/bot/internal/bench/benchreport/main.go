// Command benchreport reads `bot bench`'s JSON for the scripts that
// measure hitlbot:
//
//	benchreport compare OLD.jsonl NEW.jsonl
//
// prints each figure's median and range over the runs of each file (one
// JSON object a line) and new ÷ old (scripts/benchcmp.sh), and
//
//	benchreport measured [-commit C] [-redis V] [-load-before L] [-load-after L] [-build-* ...] ROWS
//
// writes docs/measured.md to stdout from ROWS, one run a line: the
// command, a tab, its JSON (scripts/measure.sh, `make measure`); the
// -build-* flags give the cold build's figures (-build-wall > 0 shows them).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchreport: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: benchreport compare OLD.jsonl NEW.jsonl | benchreport measured [flags] ROWS")
	}
	switch args[0] {
	case "compare":
		if len(args) != 3 {
			return fmt.Errorf("usage: benchreport compare OLD.jsonl NEW.jsonl")
		}
		old, err := outputs(args[1])
		if err != nil {
			return err
		}
		new, err := outputs(args[2])
		if err != nil {
			return err
		}
		return bench.Compare(stdout, old, new)
	case "measured":
		fs := flag.NewFlagSet("benchreport measured", flag.ContinueOnError)
		m := bench.Machine{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), CPU: cpuModel(),
			Date: time.Now().UTC().Format("2006-01-02 15:04 UTC")}
		fs.StringVar(&m.Commit, "commit", "", "the commit measured")
		fs.StringVar(&m.Redis, "redis", "", "the Redis measured against")
		fs.StringVar(&m.LoadBefore, "load-before", "", "the load average before the runs")
		fs.StringVar(&m.LoadAfter, "load-after", "", "the load average after the runs")
		fs.StringVar(&m.PeerMissing, "peer-missing", "", "why the peer (scripts/peerbench.sh) was not measured")
		var bd bench.Build
		fs.Float64Var(&bd.Wall, "build-wall", 0, "the cold build's elapsed seconds (0: not measured)")
		fs.Float64Var(&bd.CPU, "build-cpu", 0, "the cold build's user+system CPU seconds")
		fs.Float64Var(&bd.Download, "build-download", 0, "seconds of go mod download into an empty module cache")
		fs.IntVar(&bd.Packages, "build-packages", 0, "go list -deps ./cmd/bot | wc -l")
		fs.Int64Var(&bd.BinaryBytes, "build-bytes", 0, "the binary's size in bytes")
		fs.StringVar(&bd.Load, "build-load", "", "the load average when the build started")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return fmt.Errorf("usage: benchreport measured [flags] ROWS")
		}
		if bd.Wall > 0 {
			m.Build = &bd
		}
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		defer f.Close()
		rows, err := bench.ParseRows(f)
		if err != nil {
			return err
		}
		return bench.WriteMeasured(stdout, m, rows)
	default:
		return fmt.Errorf("%q: want compare or measured", args[0])
	}
}

func outputs(path string) ([]bench.Output, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return bench.ParseOutputs(f)
}

// cpuModel returns the processor's name as Linux gives it, or the
// architecture elsewhere.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}
