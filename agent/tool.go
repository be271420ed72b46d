package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/approval"
)

// Tool is something the agent can do in the world.
//
// Run's contract decides what happens after an approval: return an Output
// with IsError for a failure the tool knows about (the statement was refused,
// the HTTP call answered 4xx); return an error only when the effect is
// unknown (the connection dropped during a commit), which freezes the
// approval so it is never re-run by itself.
type Tool interface {
	// Name is the tool's unique name, lower_snake_case.
	Name() string
	// Description tells the model what the tool does.
	Description() string
	// Schema is the JSON schema of the arguments object.
	Schema() *jsonschema.Schema
	// Effect classifies one call (read, write or destructive); it may look at
	// the arguments (a DELETE is destructive, a SELECT is a read).
	Effect(args json.RawMessage) approval.Effect
	// Preview summarises one call for a person, e.g. "DELETE FROM orders
	// WHERE … affects 37 rows". It must not change anything.
	Preview(ctx context.Context, args json.RawMessage) (string, error)
	// Run performs the call.
	Run(ctx context.Context, args json.RawMessage) (Output, error)
}

// Assessor is a Tool that can measure a call before the policy decides:
// its blast radius (a dry run that is rolled back) can raise the call's
// risk, e.g. a write that affects more rows than approval.policy.high_rows.
// The loop calls Assess instead of Preview, once per call, before the
// policy, and shows that preview on the card, so the numbers the policy
// judged are the ones a person sees.
type Assessor interface {
	// Assess returns the call's blast radius and its preview. It must not
	// change anything and never fails: what it cannot measure it leaves
	// unmeasured, and the preview says why.
	Assess(ctx context.Context, args json.RawMessage) (approval.Blast, string)
}

// Checker is a Tool that can tell, without running anything or touching
// the world, whether Run would refuse a call (sql_query refuses what is not
// a read). The registry asks it in Check.
type Checker interface {
	// Check returns why Run would refuse args, or nil when Run would
	// take them.
	Check(args json.RawMessage) error
}

// Output is what a tool run produced.
type Output struct {
	// Content is the result text shown to the model and the user.
	Content string
	// IsError reports a failure the tool knows about.
	IsError bool
}

// Registry holds the tools by name and validates arguments against their
// schemas. It implements approval.Dispatcher.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]entry
}

type entry struct {
	tool     Tool
	resolved *jsonschema.Resolved
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]entry{}} }

// Register adds tools; a duplicate name or a schema that does not resolve is an error.
func (r *Registry) Register(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range tools {
		if _, dup := r.tools[t.Name()]; dup {
			return fmt.Errorf("tool %q registered twice", t.Name())
		}
		s := t.Schema()
		if s == nil {
			return fmt.Errorf("tool %q has no argument schema", t.Name())
		}
		res, err := s.Resolve(nil)
		if err != nil {
			return fmt.Errorf("tool %q: schema: %w", t.Name(), err)
		}
		r.tools[t.Name()] = entry{t, res}
	}
	return nil
}

// Replace swaps the whole tool set at once (a config reload). Nothing
// changes if any tool is invalid. Calls already dispatched finish with the
// tool they started with; an approval decided later runs the tool
// registered under its name at that time, or fails as unknown.
func (r *Registry) Replace(tools ...Tool) error {
	next := NewRegistry()
	if err := next.Register(tools...); err != nil {
		return err
	}
	r.mu.Lock()
	r.tools = next.tools
	r.mu.Unlock()
	return nil
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	return e.tool, ok
}

// Tools returns every tool, sorted by name.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.tools))
	for _, e := range r.tools {
		out = append(out, e.tool)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Validate checks args against the named tool's schema. The error says
// what is wrong in words the model can act on.
func (r *Registry) Validate(name string, args json.RawMessage) (Tool, error) {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown tool %q", name)
	}
	var v any
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, fmt.Errorf("arguments of %s are not valid JSON: %v", name, err)
	}
	if _, isObj := v.(map[string]any); !isObj {
		return nil, fmt.Errorf("arguments of %s must be a JSON object", name)
	}
	if err := e.resolved.Validate(v); err != nil {
		return nil, fmt.Errorf("invalid arguments for %s: %v", name, err)
	}
	return e.tool, nil
}

// Check asks the named tool, without running anything, whether it would
// take args and what effect the call has: the error says why not (an
// unknown tool, arguments its schema refuses, or the tool's own refusal
// when it is a Checker); otherwise the tool's Effect for args.
func (r *Registry) Check(name string, args json.RawMessage) (approval.Effect, error) {
	t, err := r.Validate(name, args)
	if err != nil {
		return "", err
	}
	if c, ok := t.(Checker); ok {
		if err := c.Check(args); err != nil {
			return "", err
		}
	}
	return t.Effect(args), nil
}

// Dispatch validates and runs one approved call. Validation failures wrap
// approval.ErrNotRun; a panic in the tool is returned as an error of
// unknown effect.
func (r *Registry) Dispatch(ctx context.Context, c approval.Call) (res approval.Result, err error) {
	res = approval.Result{Tool: c.Tool, CallID: c.CallID}
	t, verr := r.Validate(c.Tool, c.Args)
	if verr != nil {
		return res, fmt.Errorf("%w: %v", approval.ErrNotRun, verr)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("tool %s panicked: %v\n%s", c.Tool, p, debug.Stack())
		}
	}()
	out, err := t.Run(ctx, c.Args)
	if err != nil {
		return res, err
	}
	res.Content, res.IsError = out.Content, out.IsError
	if out.IsError {
		res.Status = approval.StatusFailed
	} else {
		res.Status = approval.StatusExecuted
	}
	return res, nil
}

var _ approval.Dispatcher = (*Registry)(nil)
