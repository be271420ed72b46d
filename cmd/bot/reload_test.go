package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
)

// TestReloadAndShutdownExclusive reloads the tools (which swaps the SQL
// connection pools) over and over while the core shuts down, then once
// more after it has: with -race, the swap and the shutdown's release of
// the pools must not overlap, and no reload may install pools after the
// release closed them (they would never be closed).
func TestReloadAndShutdownExclusive(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bot.yaml")
	write := func(tasks bool) {
		t.Helper()
		text := "tools:\n  tasks:\n    enabled: false\n"
		if tasks {
			text = "tools:\n  tasks:\n    enabled: true\n"
		}
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Error(err)
		}
	}
	write(true)
	opts := config.Options{File: file, Overrides: map[string]any{"server.data_dir": filepath.Join(dir, "data")}}
	cfg, ps := config.Check(opts)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	logs := &syncBuffer{}
	ctx := context.Background()
	c, err := newCore(ctx, cfg, newLogger(logs, "info"))
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	reloaded := make(chan struct{})
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			write(i%2 == 1) // every reload changes the tools
			c.reload(ctx, opts, "test")
			if i == 1 {
				close(reloaded)
			}
		}
	}()
	<-reloaded // the pools have been swapped at least once
	c.shutdown(ctx)
	close(stop)
	wg.Wait()

	// After the shutdown, a reload changes nothing.
	c.reloadMu.Lock()
	dbs := c.dbs
	c.reloadMu.Unlock()
	write(!c.running.Tools.Tasks.Enabled)
	c.reload(ctx, opts, "test")
	if c.dbs != dbs {
		t.Fatal("a reload after the shutdown installed new connection pools")
	}
	if names := c.dbs.Names(); len(names) != 0 {
		t.Fatalf("the connection pools in use after the shutdown are open: %v", names)
	}
	if !strings.Contains(logs.String(), "config reload ignored") {
		t.Errorf("the log does not say the reload was ignored:\n%s", logs)
	}

	// A reload whose context has ended (the server began shutting down)
	// does nothing either.
	c2, err := newCore(ctx, cfg, newLogger(logs, "info"))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.shutdown(ctx)
	before := c2.dbs
	write(!c2.running.Tools.Tasks.Enabled)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	c2.reload(ended, opts, "test")
	if c2.dbs != before || c2.running.Tools.Tasks.Enabled != cfg.Tools.Tasks.Enabled {
		t.Fatal("a reload after the shutdown began applied the new config")
	}
}
