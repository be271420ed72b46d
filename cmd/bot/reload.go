package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
)

// reloadDebounce lets an editor finish writing (several events) before
// the file is read again.
const reloadDebounce = 300 * time.Millisecond

// watcher delivers what may trigger a reload: SIGHUP, and changes in the
// config file's directory. It is set up before the server says it is
// ready, so that neither a signal nor an edit right after is missed (an
// unhandled SIGHUP would end the process).
type watcher struct {
	hup    chan os.Signal
	fsw    *fsnotify.Watcher // nil when no file was read or it cannot be watched
	events <-chan fsnotify.Event
	errs   <-chan error
}

func (c *core) newWatcher() *watcher {
	w := &watcher{hup: make(chan os.Signal, 1)}
	signal.Notify(w.hup, syscall.SIGHUP)
	if file := c.cfg.File(); file != "" {
		// Watch the directory, not the file: editors and Kubernetes
		// replace the file (rename, symlink swap) rather than write it.
		fsw, err := fsnotify.NewWatcher()
		if err == nil {
			if err = fsw.Add(filepath.Dir(file)); err != nil {
				fsw.Close()
			}
		}
		if err != nil {
			c.log.Warn("cannot watch the config file; reload with SIGHUP", "file", file, "err", err)
		} else {
			w.fsw, w.events, w.errs = fsw, fsw.Events, fsw.Errors
		}
	}
	return w
}

func (w *watcher) close() {
	signal.Stop(w.hup)
	if w.fsw != nil {
		w.fsw.Close()
	}
}

// watchConfig reloads the config on SIGHUP and when the file changes,
// until ctx ends; then it closes w.
func (c *core) watchConfig(ctx context.Context, opts config.Options, w *watcher) {
	defer w.close()
	// A file read as the default ./config.yaml is read again the same way.
	if opts.File == "" {
		opts.File = c.cfg.File()
	}
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.hup:
			c.reload(ctx, opts, "SIGHUP")
		case ev := <-w.events:
			if c.concerns(ev) {
				debounce = time.After(reloadDebounce)
			}
		case err := <-w.errs:
			c.log.Warn("watching the config file", "err", err)
		case <-debounce:
			debounce = nil
			c.reload(ctx, opts, "file changed")
		}
	}
}

// concerns reports whether a change in the config file's directory may have
// changed the file: the file itself, or (Kubernetes ConfigMaps) a symlinked
// directory entry such as ..data.
func (c *core) concerns(ev fsnotify.Event) bool {
	if ev.Op == fsnotify.Chmod {
		return false
	}
	base := filepath.Base(ev.Name)
	return base == filepath.Base(c.cfg.File()) || strings.HasPrefix(base, "..")
}

// reload reads the config again. The approval policy (approval.policy and
// approval.timeout) and the tools section take effect at once, each by an
// atomic swap: a pending approval keeps the rules it was created under (its
// approvers and expiry are in its record); the tool set is rebuilt (its
// databases opened anew) and replaces the old one whole. A config with any
// problem is not applied: the running one stays and the log says why.
// Changes to other sections are logged as needing a restart.
//
// A reload and the shutdown's release of the databases exclude each
// other: once ctx has ended (the server is shutting down) or release has
// begun, a reload does nothing; release waits for a reload in progress,
// whose opening of databases ends with ctx.
func (c *core) reload(ctx context.Context, opts config.Options, why string) {
	c.reloadMu.Lock()
	defer c.reloadMu.Unlock()
	log := c.log.With("reason", why, "config", opts.File)
	if c.closing || ctx.Err() != nil {
		log.Info("shutting down; config reload ignored")
		return
	}
	cfg, ps := config.Check(opts)
	if len(ps) > 0 {
		msgs := make([]string, len(ps))
		for i, p := range ps {
			msgs[i] = p.String()
		}
		log.Error("config reload failed; keeping the running config", "problems", msgs)
		c.metrics.Reload("failed")
		return
	}
	restart := changedSections(c.running, cfg)
	if len(restart) > 0 {
		log.Warn("config sections changed that only take effect after a restart", "sections", restart)
	}
	if !reflect.DeepEqual(c.running.Tools.MCP, cfg.Tools.MCP) {
		// The MCP servers run as they were started until a restart.
		log.Warn("config section tools.mcp changed; it takes effect after a restart")
		cfg.Tools.MCP = c.running.Tools.MCP
	}
	toolsChanged := !reflect.DeepEqual(c.running.Tools, cfg.Tools)
	if toolsChanged {
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		all, dbs, err := c.makeTools(tctx, cfg)
		cancel()
		if ctx.Err() != nil { // the shutdown began while the tools were built
			if dbs != nil {
				dbs.Close()
			}
			log.Info("shutting down; config reload abandoned")
			return
		}
		if err == nil {
			err = c.tools.Replace(all...)
		}
		if err != nil {
			if dbs != nil {
				dbs.Close()
			}
			log.Error("config reload failed: the tools could not be built; keeping the running config", "err", err)
			c.metrics.Reload("failed")
			return
		}
		old := c.dbs
		c.dbs = dbs
		// Calls dispatched before the swap may still use the old
		// databases: close them once the longest run could have ended.
		time.AfterFunc(c.cfg.Approval.ExecTimeout+time.Minute, func() { old.Close() })
		running := *c.running
		running.Tools = cfg.Tools
		c.running = &running
		log.Info("tools reloaded", "tools", len(all))
	}
	next := cfg.Approval.EffectivePolicy()
	if reflect.DeepEqual(next, c.policy.Load().Config()) {
		log.Info("config reloaded; the approval policy is unchanged")
		if toolsChanged {
			c.metrics.Reload("ok")
		} else {
			c.metrics.Reload("unchanged")
		}
		return
	}
	pol, err := approval.NewPolicy(next)
	if err != nil { // Check validated it; this is a safety net
		log.Error("config reload failed; keeping the running policy", "err", err)
		c.metrics.Reload("failed")
		return
	}
	c.policy.Store(pol)
	running := *c.running
	running.Approval.Policy, running.Approval.Timeout = cfg.Approval.Policy, cfg.Approval.Timeout
	c.running = &running
	log.Info("approval policy reloaded", "strict", next.Strict, "confidence_threshold", next.ConfidenceThreshold, "enabled", next.Enabled)
	c.metrics.Reload("ok")
}

// changedSections lists the sections (and approval keys) that differ
// between two configs, apart from what reload applies.
func changedSections(old, cur *config.Config) []string {
	var out []string
	ov, cv := reflect.ValueOf(*old), reflect.ValueOf(*cur)
	t := ov.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if f.Name == "Tools" { // reloaded
			continue
		}
		if f.Name == "Approval" {
			oa, ca := old.Approval, cur.Approval
			oa.Policy, ca.Policy = approval.PolicyConfig{}, approval.PolicyConfig{}
			oa.Timeout, ca.Timeout = 0, 0
			if !reflect.DeepEqual(oa, ca) {
				out = append(out, key+" (other than policy and timeout)")
			}
			continue
		}
		if !reflect.DeepEqual(ov.Field(i).Interface(), cv.Field(i).Interface()) {
			out = append(out, key)
		}
	}
	return out
}
