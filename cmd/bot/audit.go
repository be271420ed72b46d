package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
)

const auditUsage = `usage: bot audit verify|tail [FLAGS]

  verify   check every writer's hash chain in the audit file and, when
           store.backend is redis, in the Redis stream; prints OK or the
           first break (exit 1)
  tail     print the newest records, then follow new ones until Ctrl+C
`

// cmdAudit is `bot audit verify|tail`.
func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, auditUsage)
		return 2
	}
	sub, args := args[0], args[1:]
	fs, c := newFlags("audit "+sub, stderr)
	file := fs.String("file", "", "read this audit `file` instead of audit.file")
	source := fs.String("source", "", "what to read: file, redis or both (default: both when store.backend is redis, else file)")
	var n *int
	var asJSON *bool
	switch sub {
	case "verify":
	case "tail":
		n = fs.Int("n", 10, "print the newest `N` records before following")
		asJSON = fs.Bool("json", false, "print records as JSON lines")
	default:
		fmt.Fprintf(stderr, "bot audit: unknown subcommand %q\n\n%s", sub, auditUsage)
		return 2
	}
	if st := parse(fs, args); st >= 0 {
		return st
	}
	// Only what reading the trail needs must be right: no Validate.
	opts := c.options()
	cfg, err := config.Load(opts)
	if err != nil {
		var ps config.Problems
		if !errors.As(err, &ps) {
			ps = config.Problems{{Msg: err.Error()}}
		}
		printProblems(stderr, opts, cfg, ps)
		return 1
	}
	if *file != "" {
		cfg.Audit.File = *file
	}
	useFile, useRedis := true, cfg.Store.Backend == "redis"
	switch *source {
	case "":
	case "file":
		useRedis = false
	case "redis":
		useFile, useRedis = false, true
	case "both":
		useRedis = true
	default:
		fmt.Fprintf(stderr, "bot audit %s: -source %q is not file, redis or both\n", sub, *source)
		return 2
	}
	var rc redis.UniversalClient
	if useRedis {
		// go-redis's own lines (a failed dial) as JSON records on stderr.
		routeLibraryLogs(newLogger(stderr, cfg.Log.Level))
		if rc, err = redisstore.NewClient(cfg.Store.Redis.ClientConfig()); err != nil {
			fmt.Fprintf(stderr, "bot audit: store.redis: %v\n", err)
			return 1
		}
		defer rc.Close()
	}
	key := cfg.Store.Redis.AuditStreamKey()
	if sub == "verify" {
		return auditVerify(ctx, cfg, useFile, rc, key, stdout, stderr)
	}
	if useFile && useRedis {
		useFile = false // one source to follow: the stream has every replica's records
	}
	pr := recordPrinter{w: stdout, json: *asJSON}
	if useFile {
		err = tailFile(ctx, cfg.Audit.File, *n, pr.print)
	} else {
		err = tailStream(ctx, rc, key, *n, pr.print)
	}
	if err != nil && ctx.Err() == nil { // ^C (ctx ending) is the normal end of tail
		fmt.Fprintf(stderr, "bot audit tail: %v\n", err)
		return 1
	}
	return 0
}

// auditVerify checks the file and/or the stream.
func auditVerify(ctx context.Context, cfg *config.Config, useFile bool, rc redis.UniversalClient, key string, stdout, stderr io.Writer) int {
	status := 0
	check := func(what string, recs []audit.Record, err error) {
		if err != nil {
			fmt.Fprintf(stderr, "FAIL %s: %v\n", what, err)
			status = 1
			return
		}
		if err := audit.Verify(recs); err != nil {
			fmt.Fprintf(stdout, "BROKEN %s: %v\n", what, err)
			status = 1
			return
		}
		uniq := audit.Dedupe(recs)
		writers := map[string]bool{}
		for _, r := range uniq {
			writers[r.Writer] = true
		}
		fmt.Fprintf(stdout, "OK %s: %d records from %d writers, every chain intact\n", what, len(uniq), len(writers))
	}
	if useFile {
		recs, err := audit.ReadFile(cfg.Audit.File)
		if err != nil && errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%s does not exist (nothing was audited yet, or audit.file / -data point elsewhere)", cfg.Audit.File)
		}
		check("file "+cfg.Audit.File, recs, err)
	}
	if rc != nil {
		recs, err := audit.ReadStream(ctx, rc, key, 0)
		check("redis stream "+key, recs, err)
	}
	return status
}

// recordPrinter prints records as text or JSON lines.
type recordPrinter struct {
	w    io.Writer
	json bool
}

func (p recordPrinter) print(r audit.Record) {
	if p.json {
		b, _ := json.Marshal(r)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-15s %s", r.Time.UTC().Format(time.RFC3339), r.Event, r.ApprovalID)
	for _, kv := range [][2]string{{"tool", r.Tool}, {"actor", r.Actor}, {"source", r.Source}, {"outcome", r.Outcome}, {"error", r.Error}, {"reason", r.Reason}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%q", kv[0], kv[1])
		}
	}
	fmt.Fprintln(p.w, b.String())
}

// tailPoll is how often tail looks for new lines in the file.
const tailPoll = 500 * time.Millisecond

// tailFile prints the last n records of the file, then follows it
// (starting again from the top if it is truncated or replaced).
func tailFile(ctx context.Context, path string, n int, out func(audit.Record)) error {
	recs, err := audit.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, r := range recs[max(0, len(recs)-n):] {
		out(r)
	}
	var offset int64
	if st, err := os.Stat(path); err == nil {
		offset = st.Size()
	}
	var partial []byte
	t := time.NewTicker(tailPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		st, err := os.Stat(path)
		if err != nil {
			continue // not there (yet, or while being replaced)
		}
		if st.Size() < offset {
			offset, partial = 0, nil
		}
		if st.Size() == offset {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		f.Seek(offset, io.SeekStart)
		br := bufio.NewReader(f)
		for {
			line, err := br.ReadBytes('\n')
			offset += int64(len(line))
			if err != nil { // an incomplete last line: keep it for the next round
				partial = append(partial, line...)
				break
			}
			line = append(partial, line...)
			partial = nil
			var r audit.Record
			if strings.TrimSpace(string(line)) == "" {
				continue
			}
			if json.Unmarshal(line, &r) == nil {
				out(r)
			}
		}
		f.Close()
	}
}

// tailStream prints the last n records of the stream, then follows it.
func tailStream(ctx context.Context, rc redis.UniversalClient, key string, n int, out func(audit.Record)) error {
	if n > 0 {
		recs, err := audit.ReadStream(ctx, rc, key, int64(n))
		if err != nil {
			return err
		}
		for _, r := range recs {
			out(r)
		}
	}
	from := "$"
	for {
		recs, next, err := audit.Tail(ctx, rc, key, from, 5*time.Second)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return err
		}
		for _, r := range recs {
			out(r)
		}
		from = next
	}
}
