package channels

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Registry holds the channels of a process by name. It is made first
// (Assemble), and the Presenter (which sends through the channels) and the
// Router (which starts them with itself as their Handler) both get it;
// channels are registered on it before the Router starts them. It is safe
// for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	chans map[string]Channel
	order []string // registration order, for Start and Close
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{chans: map[string]Channel{}} }

// Register adds a channel under its Name. A second channel with the same
// name is an error.
func (g *Registry) Register(ch Channel) error {
	if ch == nil || ch.Name() == "" {
		return errors.New("channels.Registry.Register: a channel needs a name")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.chans[ch.Name()]; dup {
		return fmt.Errorf("channels.Registry.Register: channel %q registered twice", ch.Name())
	}
	g.chans[ch.Name()] = ch
	g.order = append(g.order, ch.Name())
	return nil
}

// Channel returns the channel registered under name, or an error naming it.
func (g *Registry) Channel(name string) (Channel, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if ch, ok := g.chans[name]; ok {
		return ch, nil
	}
	return nil, fmt.Errorf("channels: no channel %q is registered", name)
}

// Channels returns the registered channels, sorted by name.
func (g *Registry) Channels() []Channel {
	g.mu.RLock()
	defer g.mu.RUnlock()
	names := make([]string, 0, len(g.chans))
	for n := range g.chans {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Channel, len(names))
	for i, n := range names {
		out[i] = g.chans[n]
	}
	return out
}

// inOrder returns the registered channels in registration order.
func (g *Registry) inOrder() []Channel {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]Channel, len(g.order))
	for i, n := range g.order {
		out[i] = g.chans[n]
	}
	return out
}

// Ready reports every channel's readiness (for /readyz); nil when all are
// ready.
func (g *Registry) Ready() error {
	var errs []error
	for _, ch := range g.Channels() {
		if err := ch.Ready(); err != nil {
			errs = append(errs, fmt.Errorf("channel %s: %w", ch.Name(), err))
		}
	}
	return errors.Join(errs...)
}
