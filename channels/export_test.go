package channels

import "time"

// What the external tests of this package (channels_test: they use the
// test rig internal/hitltest, which imports channels) read of its
// insides.

// Drain waits until the messages r took are handled.
func (r *Router) Drain() { r.inflight.Wait() }

// Wiring returns the registry and the presenter r was given.
func (r *Router) Wiring() (*Registry, *Presenter) { return r.reg, r.pres }

// Shows returns the registry p shows through.
func (p *Presenter) Shows() *Registry { return p.reg }

// Refusals is the router's memory of refusal notices.
type Refusals = refusals

// MaxRefusalNotices bounds it.
const MaxRefusalNotices = maxRefusalNotices

// Due is refusals.due.
func (r *Refusals) Due(key string, now time.Time) bool { return r.due(key, now) }

// Len is how many notices r remembers.
func (r *Refusals) Len() int { return len(r.last) }
