package agent

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// TestLogWithLogsWhatWithLogs: a LogWith logger writes what l.With
// writes, through every way a record reaches the handler.
func TestLogWithLogsWhatWithLogs(t *testing.T) {
	var want, got bytes.Buffer
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	w := slog.New(slog.NewJSONHandler(&want, opts)).With("channel", "web", "user_id", approval.UserID("u1"), "approval_id", approval.ID("a1"))
	g := LogWith(slog.New(slog.NewJSONHandler(&got, opts)), slog.String("channel", "web"), slog.Any("user_id", approval.UserID("u1")), slog.Any("approval_id", approval.ID("a1")))
	for _, l := range []*slog.Logger{w, g} {
		l.Debug("not written")
		l.Info("one", "n", 1)
		l.With("more", true).Warn("two")
		l.WithGroup("g").Error("three", "k", "v")
		l.Info("four")
	}
	strip := func(b []byte) []byte { // the times differ
		var out [][]byte
		for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			if i := bytes.Index(line, []byte(`"level"`)); i > 0 {
				line = line[i:]
			}
			out = append(out, line)
		}
		return bytes.Join(out, []byte("\n"))
	}
	if g, w := strip(got.Bytes()), strip(want.Bytes()); !bytes.Equal(g, w) {
		t.Fatalf("LogWith wrote\n%s\nWith wrote\n%s", g, w)
	}
}

// countingHandler counts the WithAttrs calls made on it.
type countingHandler struct {
	slog.Handler
	withAttrs *int
}

func (h countingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	*h.withAttrs++
	return countingHandler{h.Handler.WithAttrs(as), h.withAttrs}
}

// TestLogWithFormatsNothingUntilALineIsLogged: the attributes reach the
// handler with the first record the handler takes, and only once.
func TestLogWithFormatsNothingUntilALineIsLogged(t *testing.T) {
	var n int
	var buf bytes.Buffer
	l := LogWith(slog.New(countingHandler{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}), &n}), slog.String("chat_id", "c"))
	l.Info("below the level")
	if n != 0 || buf.Len() != 0 {
		t.Fatalf("after a record below the level: %d WithAttrs calls, %q written", n, buf.String())
	}
	if !l.Enabled(context.Background(), slog.LevelWarn) || l.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("Enabled is not the handler's")
	}
	l.Warn("w1")
	l.Error("e1")
	if n != 1 || !bytes.Contains(buf.Bytes(), []byte("chat_id=c")) || bytes.Count(buf.Bytes(), []byte("chat_id=c")) != 2 {
		t.Fatalf("after two records: %d WithAttrs calls, %q written", n, buf.String())
	}
}
