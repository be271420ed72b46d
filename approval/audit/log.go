package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

// LogConfig configures a Log. It is the `audit` section of the YAML file.
type LogConfig struct {
	// Writer names this process's chain. Empty means NewWriterID()
	// (hostname-pid-random). Two live processes must never share a name.
	Writer string
	// QueueSize is the most records that may be appended but not yet
	// written by every sink. While it is reached (a sink is down), a record
	// appended is refused, not chained: Append never blocks, and TryAppend
	// says so (the engine then runs nothing; see Log). 0 means 4096.
	QueueSize int
	// FlushInterval is the longest a record waits for companions before a
	// batch smaller than BatchSize is written. Flush and Close write at
	// once. 0 means 50ms; a negative value writes as soon as anything waits.
	FlushInterval time.Duration
	// BatchSize is the most records passed to one Sink.Write. 0 means 256.
	// It is lowered to QueueSize when that is smaller.
	BatchSize int
	// RetryMin is the pause after a failed sink write; it doubles with each
	// further failure of that sink. 0 means 100ms.
	RetryMin time.Duration
	// RetryMax caps the pause between retries. 0 means 5s.
	RetryMax time.Duration
}

func (c LogConfig) withDefaults() LogConfig {
	if c.Writer == "" {
		c.Writer = NewWriterID()
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 4096
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = 50 * time.Millisecond
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 256
	}
	c.BatchSize = min(c.BatchSize, c.QueueSize)
	if c.RetryMin <= 0 {
		c.RetryMin = 100 * time.Millisecond
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 5 * time.Second
	}
	c.RetryMax = max(c.RetryMax, c.RetryMin)
	return c
}

// Log is this process's audit trail: it chains the records it is given and
// writes them, in batches, to every sink.
//
// Append assigns each record its place in the writer's chain under a mutex,
// so the chain order is the order of the Append calls, and queues it. One
// goroutine per sink writes the queue in batches; sinks proceed
// independently, and Append never waits for I/O while the queue has room.
// A failed write is logged (attributes "sink" and "err") and retried with
// backoff for as long as the process lives: records queued are not lost.
// When a sink stays down the queue fills; then each record appended is
// refused (TryAppend returns an error of kind unavailable), not chained, so
// the chain stays whole, and nothing waits: a caller that cannot go on
// without its record (the engine, before it runs a tool) fails instead of
// hanging. The first refusal of an outage is logged ("audit queue full"),
// and so is the room coming back, with the count refused. Queued is not
// written, though: before the engine runs a tool it calls Flush, which
// writes at once (with whatever else is queued, so concurrent decisions
// share one batch) and returns when every sink has the records; a tool whose
// confirm record was refused, or cannot be written in time, is not run.
type Log struct {
	cfg    LogConfig
	now    func() time.Time
	logger *slog.Logger
	sinks  []*sinkWorker

	mu       sync.Mutex
	seq      uint64        // the Seq of the newest record
	head     string        // its Hash
	buf      []Record      // records base+1 … seq, not yet written by every sink
	base     uint64        // every sink has written the records up to this Seq
	flushTo  uint64        // sinks write at once, without waiting, up to this Seq
	refused  uint64        // records refused for want of room since the queue last had room
	refusedN uint64        // records refused for want of room since start (Health)
	closing  bool          // Close has begun; new Append calls are refused
	progress chan struct{} // closed and replaced when base advances

	ctx       context.Context // passed to Sink.Write; cancelled when Close gives up
	cancel    context.CancelFunc
	stop      chan struct{} // closed to stop the sink goroutines
	wg        sync.WaitGroup
	closeDone chan struct{} // closed when Close has finished
	closeErr  error
}

// sinkWorker is one sink and its writer goroutine.
type sinkWorker struct {
	sink Sink
	name string
	done uint64 // the sink has written the records up to this Seq; guarded by Log.mu
	// failing is the sink's current run of failed writes (zero while its
	// last write succeeded); guarded by Log.mu.
	failing SinkFailure
	wake    chan struct{} // capacity 1: there is something to look at
}

// NewLog starts a log that writes to sinks. clock stamps records whose Time
// is zero (nil means time.Now); logger receives sink failures (nil discards
// them). Call Close to write what is queued and release the sinks.
//
// With no sinks the log still chains records (Head moves) but stores nothing.
func NewLog(cfg LogConfig, clock func() time.Time, logger *slog.Logger, sinks ...Sink) *Log {
	if clock == nil {
		clock = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Log{
		cfg:       cfg.withDefaults(),
		now:       clock,
		logger:    logger,
		progress:  make(chan struct{}),
		ctx:       ctx,
		cancel:    cancel,
		stop:      make(chan struct{}),
		closeDone: make(chan struct{}),
	}
	for _, s := range sinks {
		w := &sinkWorker{sink: s, name: sinkName(s), wake: make(chan struct{}, 1)}
		l.sinks = append(l.sinks, w)
	}
	for _, w := range l.sinks {
		l.wg.Add(1)
		go l.run(w)
	}
	return l
}

func sinkName(s Sink) string {
	if n, ok := s.(fmt.Stringer); ok {
		return n.String()
	}
	return fmt.Sprintf("%T", s)
}

// Health is what Log.Health says of the trail: enough for /readyz and
// /metrics to tell that approved tools cannot run.
type Health struct {
	// Failing are the sinks whose last write failed, in the order the log
	// was given them; empty while every sink writes.
	Failing []SinkFailure
	// Queued is how many records wait for a sink; QueueSize how many may.
	// While Queued is QueueSize each new record is refused.
	Queued, QueueSize int
	// Refused is how many records were refused for want of room since
	// the log started: they are not in the trail.
	Refused uint64
}

// SinkFailure is a sink's run of failed writes.
type SinkFailure struct {
	Sink     string    // the sink's name (file:<path>, redis:<key>)
	Since    time.Time // the first failure of the run, by the log's clock
	Attempts int       // failed writes in the run
	Err      string    // the last failure's error
}

// Health says whether a sink is failing and since when, how many records
// wait and how many were refused. It takes the log's mutex briefly and
// does no I/O.
func (l *Log) Health() Health {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := Health{QueueSize: l.cfg.QueueSize, Refused: l.refusedN}
	if len(l.sinks) > 0 {
		h.Queued = int(l.seq - l.base)
	}
	for _, w := range l.sinks {
		if !w.failing.Since.IsZero() {
			h.Failing = append(h.Failing, w.failing)
		}
	}
	return h
}

// Writer returns the name of this log's chain.
func (l *Log) Writer() string { return l.cfg.Writer }

// Head returns the Seq and Hash of the newest record appended (0 and ""
// before the first). Logging it elsewhere from time to time gives Verify's
// readers an external anchor.
func (l *Log) Head() (seq uint64, hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.head
}

// Append adds r to the chain and queues it for the sinks. It sets Writer,
// Seq, Prev and Hash, sets Time from the clock when it is zero, and
// converts Time to UTC. Strings that are not valid UTF-8 are repaired
// (invalid bytes become U+FFFD) so that the record survives JSON unchanged.
//
// Append never blocks: while QueueSize records wait for a sink, the record
// is refused (see TryAppend). Calling Append after Close has begun is a
// programming error; the record is logged at Error level and not written.
func (l *Log) Append(r Record) { _ = l.TryAppend(r) }

// TryAppend is Append, saying whether the record was taken: an error of
// kind unavailable when it was refused, because QueueSize records wait for
// a sink (the first refusal of an outage is logged) or Close has begun.
// A record taken is queued, not yet written: see Flush.
func (l *Log) TryAppend(r Record) error {
	const op = "audit.Append"
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		l.dropped(r, "audit record appended after Close; not written")
		return E(op, errkind.Unavailable, errors.New("the audit log is closing"))
	}
	if waiting := l.seq - l.base; len(l.sinks) > 0 && waiting >= uint64(l.cfg.QueueSize) {
		l.refused++
		l.refusedN++
		first := l.refused == 1
		l.mu.Unlock()
		if first {
			l.logger.Error("audit queue full; records are refused until a sink catches up, and no tool runs",
				"queue_size", l.cfg.QueueSize, "approval_id", r.ApprovalID, "event", string(r.Event))
		}
		return E(op, errkind.Unavailable, fmt.Errorf("audit queue full: %d record(s) wait for a sink; record not written", waiting))
	}

	r.Writer = l.cfg.Writer
	r.Seq = l.seq + 1
	if r.Time.IsZero() {
		r.Time = l.now()
	}
	if y := r.Time.Year(); y < 1 || y > 9999 { // JSON cannot carry it
		r.Time = l.now()
	}
	r.Time = r.Time.UTC() // also drops the monotonic reading
	sanitize(&r)
	if !r.Event.Valid() {
		l.logger.Warn("audit record with an unknown event", "event", string(r.Event), "approval_id", r.ApprovalID)
	}
	r.Prev = l.head
	r.Hash = r.ComputeHash()
	l.seq, l.head = r.Seq, r.Hash

	if len(l.sinks) == 0 {
		l.base = l.seq
		l.mu.Unlock()
		return nil
	}
	l.buf = append(l.buf, r)
	for _, w := range l.sinks {
		// Wake an idle writer at the first record (to start its interval)
		// and a waiting one when a batch is full.
		if p := l.seq - w.done; p == 1 || p >= uint64(l.cfg.BatchSize) {
			poke(w.wake)
		}
	}
	l.mu.Unlock()
	return nil
}

func (l *Log) dropped(r Record, msg string) {
	l.logger.Error(msg, "approval_id", r.ApprovalID, "event", string(r.Event), "tool", r.Tool)
}

// sanitize makes every string valid UTF-8, so that JSON carries it exactly.
func sanitize(r *Record) {
	for _, p := range []*string{&r.ApprovalID, &r.Session, &r.Tool, &r.PayloadSHA256,
		&r.Actor, &r.Source, &r.Outcome, &r.Error, &r.Reason, &r.Writer} {
		*p = strings.ToValidUTF8(*p, "\uFFFD")
	}
	r.Event = Event(strings.ToValidUTF8(string(r.Event), "\uFFFD"))
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Flush waits until every record appended before the call has been written
// by every sink, or ctx ends. A sink that keeps failing makes Flush wait
// for ctx.
func (l *Log) Flush(ctx context.Context) error {
	return l.flush(ctx, "audit.Flush")
}

// flush waits until the records up to the current Seq are written.
func (l *Log) flush(ctx context.Context, op string) error {
	l.mu.Lock()
	target := l.seq
	for {
		if l.base >= target {
			l.mu.Unlock()
			return nil
		}
		if target > l.flushTo {
			l.flushTo = target
			for _, w := range l.sinks {
				poke(w.wake)
			}
		}
		ch := l.progress
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			l.mu.Lock()
			n := l.seq - l.base
			l.mu.Unlock()
			return E(op, errkind.Unavailable, fmt.Errorf("%d record(s) not yet written by every sink: %w", n, ctx.Err()))
		}
		l.mu.Lock()
	}
}

// Close writes everything appended, then stops the writers and closes the sinks. If
// ctx ends first, the records still queued are lost and the error says how
// many. Later calls wait for the first to finish and return its error.
func (l *Log) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		<-l.closeDone
		return l.closeErr
	}
	l.closing = true
	l.mu.Unlock()

	err := l.flush(ctx, "audit.Close")

	l.cancel()
	close(l.stop)
	l.wg.Wait()

	errs := []error{err}
	for _, w := range l.sinks {
		if cerr := w.sink.Close(); cerr != nil {
			errs = append(errs, E("audit.Close", errkind.Unavailable, fmt.Errorf("sink %s: %w", w.name, cerr)))
		}
	}
	l.closeErr = errors.Join(errs...)
	close(l.closeDone)
	return l.closeErr
}

// broadcast wakes everyone waiting for progress. l.mu must be held.
func (l *Log) broadcast() {
	close(l.progress)
	l.progress = make(chan struct{})
}

// run is the writer goroutine of one sink.
func (l *Log) run(w *sinkWorker) {
	defer l.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	sleep := func(wake <-chan struct{}, d time.Duration) bool {
		var tc <-chan time.Time
		if d >= 0 {
			timer.Reset(d)
			tc = timer.C
			defer timer.Stop()
		}
		select {
		case <-l.stop:
			return false
		case <-wake:
			return true
		case <-tc:
			return true
		}
	}

	var since time.Time // the interval runs from here: when the oldest waiting record came in, or earlier
	var failures int
	backoff := l.cfg.RetryMin
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		l.mu.Lock()
		pending := l.seq - w.done
		var batch []Record
		wait := time.Duration(-1) // wait for a wake only
		if pending == 0 {
			since = time.Time{}
		} else {
			now := time.Now()
			if since.IsZero() {
				since = now
			}
			waited := now.Sub(since)
			if pending >= uint64(l.cfg.BatchSize) || l.flushTo > w.done || l.closing ||
				l.cfg.FlushInterval < 0 || waited >= l.cfg.FlushInterval {
				n := min(pending, uint64(l.cfg.BatchSize))
				off := w.done - l.base
				batch = l.buf[off : off+n : off+n] // capped: a sink cannot append into buf
			} else {
				wait = l.cfg.FlushInterval - waited
			}
		}
		l.mu.Unlock()

		if batch == nil {
			if !sleep(w.wake, wait) {
				return
			}
			continue
		}
		start := time.Now()
		if err := w.sink.Write(l.ctx, batch); err != nil {
			failures++
			l.mu.Lock()
			if w.failing.Since.IsZero() {
				w.failing.Since = l.now()
			}
			w.failing.Sink, w.failing.Attempts, w.failing.Err = w.name, failures, err.Error()
			l.mu.Unlock()
			l.logger.Error("audit sink write failed; will retry", "sink", w.name, "err", err,
				"records", len(batch), "first_seq", batch[0].Seq, "attempt", failures, "retry_in", backoff)
			if !sleep(nil, backoff) {
				return
			}
			backoff = min(2*backoff, l.cfg.RetryMax)
			continue
		}
		if failures > 0 {
			l.logger.Info("audit sink recovered", "sink", w.name, "failed_attempts", failures)
			failures, backoff = 0, l.cfg.RetryMin
		}
		since = start // what came in during the write counts as waiting since it began
		l.mu.Lock()
		w.failing = SinkFailure{}
		w.done += uint64(len(batch))
		l.advance()
		refused := l.roomAgain()
		l.mu.Unlock()
		if refused > 0 {
			l.logger.Warn("audit queue has room again; the records refused meanwhile are not in the trail", "refused", refused)
		}
	}
}

// roomAgain reports how many records were refused since the queue last had
// room, once it has room again (0 otherwise), and starts the count anew.
// l.mu must be held.
func (l *Log) roomAgain() uint64 {
	if l.refused == 0 || l.seq-l.base >= uint64(l.cfg.QueueSize) {
		return 0
	}
	n := l.refused
	l.refused = 0
	return n
}

// advance drops the records every sink has written and wakes waiters.
// l.mu must be held.
func (l *Log) advance() {
	low := l.sinks[0].done
	for _, w := range l.sinks[1:] {
		low = min(low, w.done)
	}
	if low <= l.base {
		return
	}
	n := low - l.base
	clear(l.buf[:n]) // let the strings go
	l.buf = l.buf[n:]
	l.base = low
	l.broadcast()
}
