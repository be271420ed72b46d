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
	// Assess returns the call's blast radius and its preview, in both
	// languages (see WordsPreviewer). It must not change anything and
	// never fails: what it cannot measure it leaves unmeasured, and the
	// preview says why.
	Assess(ctx context.Context, args json.RawMessage) (approval.Blast, approval.Words)
}

// Checker is a Tool that can tell, without running anything or touching
// the world, whether Run would refuse a call (sql_query refuses what is not
// a read). The registry asks it in Check.
type Checker interface {
	// Check returns why Run would refuse args, or nil when Run would
	// take them.
	Check(args json.RawMessage) error
}

// Foreign is a Tool that another program defines (a tool of an MCP
// server): its description, schema and risk hints are that program's word,
// and they can change while a call waits for a person. Two things follow.
// Every call's payload hash pins the definition (approval.PinnedHash), so
// an approval binds the tool as it was shown, and Dispatch refuses a call
// whose tool has changed since (approval.ErrToolChanged). And the card
// says where the call's effect came from (EffectSource).
//
// A wrapper (metrics) keeps a Foreign tool foreign by having an
// Unwrap() Tool method; AsForeign follows it.
type Foreign interface {
	Tool
	// Definition is the hex sha256 of the tool's definition as it is
	// offered now: everything a person or the model reads of it (server,
	// name, description, input schema, annotations).
	Definition() string
	// EffectSource says where Effect came from ("annotation readOnlyHint
	// from trusted server fs", "untrusted server fs").
	EffectSource() approval.Words
}

// AsForeign returns t as a Foreign tool, looking through wrappers.
func AsForeign(t Tool) (Foreign, bool) {
	for t != nil {
		if f, ok := t.(Foreign); ok {
			return f, true
		}
		u, ok := t.(interface{ Unwrap() Tool })
		if !ok {
			return nil, false
		}
		t = u.Unwrap()
	}
	return nil, false
}

// HashCall canonicalizes a call's arguments and returns them with the
// call's payload hash: approval.PayloadHash, or for a Foreign tool
// approval.PinnedHash with its definition as it is now.
func HashCall(t Tool, name string, args []byte) (json.RawMessage, string, error) {
	canon, hash, err := approval.HashCall(name, args)
	if err != nil {
		return nil, "", err
	}
	if f, ok := AsForeign(t); ok {
		hash = approval.PinnedHash(name, canon, f.Definition())
	}
	return canon, hash, nil
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
//
// Tools come in groups, each replaced whole by whoever owns it: the
// built-in tools (group "", replaced by a config reload) and one group per
// MCP server (replaced when the server's tool list changes). A name is
// unique across all groups.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]entry
}

type entry struct {
	tool     Tool
	resolved *jsonschema.Resolved
	group    string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]entry{}} }

// Register adds tools to the built-in group; a duplicate name or a schema
// that does not resolve is an error.
func (r *Registry) Register(tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	add, err := r.resolve("", tools, r.tools)
	if err != nil {
		return err
	}
	for name, e := range add {
		r.tools[name] = e
	}
	return nil
}

// resolve checks tools for group against the names taken and resolves
// their schemas.
func (r *Registry) resolve(group string, tools []Tool, taken map[string]entry) (map[string]entry, error) {
	add := make(map[string]entry, len(tools))
	for _, t := range tools {
		name := t.Name()
		_, dup := taken[name]
		if _, again := add[name]; dup || again {
			return nil, fmt.Errorf("tool %q registered twice", name)
		}
		s := t.Schema()
		if s == nil {
			return nil, fmt.Errorf("tool %q has no argument schema", name)
		}
		res, err := s.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("tool %q: schema: %w", name, err)
		}
		add[name] = entry{t, res, group}
	}
	return add, nil
}

// Replace swaps the built-in tools at once (a config reload); SetGroup
// does the same for another group.
func (r *Registry) Replace(tools ...Tool) error { return r.SetGroup("", tools...) }

// SetGroup swaps the tools of one group at once. Nothing changes if any
// tool is invalid or takes a name of another group. Calls already
// dispatched finish with the tool they started with; an approval decided
// later runs the tool registered under its name at that time (for a
// Foreign tool, only if its definition is the one approved), or fails as
// unknown.
func (r *Registry) SetGroup(group string, tools ...Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	others := make(map[string]entry, len(r.tools))
	for name, e := range r.tools {
		if e.group != group {
			others[name] = e
		}
	}
	add, err := r.resolve(group, tools, others)
	if err != nil {
		return err
	}
	for name, e := range add {
		others[name] = e
	}
	r.tools = others
	return nil
}

// Offer is SetGroup for a group whose tools may not have every name they
// ask for (an MCP server's): a tool whose name another group holds is
// left out (the holder keeps it) and the rest replace the group. It
// returns the names left out, sorted. Nothing changes, and err says why,
// if a tool is invalid or the group names one tool twice.
func (r *Registry) Offer(group string, tools ...Tool) (taken []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	others := make(map[string]entry, len(r.tools))
	for name, e := range r.tools {
		if e.group != group {
			others[name] = e
		}
	}
	kept := make([]Tool, 0, len(tools))
	for _, t := range tools {
		if _, held := others[t.Name()]; held {
			taken = append(taken, t.Name())
			continue
		}
		kept = append(kept, t)
	}
	add, err := r.resolve(group, kept, others)
	if err != nil {
		return nil, err
	}
	for name, e := range add {
		others[name] = e
	}
	r.tools = others
	sort.Strings(taken)
	return taken, nil
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
	if f, ok := AsForeign(t); ok {
		// What runs must be what was shown: the hash the call carries
		// pins the definition it was hashed with.
		canon, err := approval.Canonicalize(c.Args)
		if err != nil || c.PayloadSHA256 == "" || approval.PinnedHash(c.Tool, canon, f.Definition()) != c.PayloadSHA256 {
			return res, fmt.Errorf("%w: %w: %s", approval.ErrNotRun, approval.ErrToolChanged, c.Tool)
		}
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

// Risk says what policy p makes of a call of the named tool with empty
// arguments ({}), confidence 1 and no grant: its risk and the reason, in
// both languages (for a Foreign tool the reason ends with where its
// effect came from, unless the policy overrides the tool's risk). It runs
// nothing, measures no blast radius and reads no grant. ok is false when
// the registry has no such tool, p is nil or the policy cannot evaluate
// the call.
func (r *Registry) Risk(p *approval.Policy, tool string) (risk approval.Risk, why approval.Words, ok bool) {
	t, found := r.Get(tool)
	if !found || p == nil {
		return 0, approval.Words{}, false
	}
	info := approval.CallInfo{Tool: tool, Effect: t.Effect(json.RawMessage("{}")), Confidence: 1}
	if f, isForeign := AsForeign(t); isForeign {
		info.EffectSource = f.EffectSource()
	}
	v, err := p.Evaluate(info, nil)
	if err != nil {
		return 0, approval.Words{}, false
	}
	return v.Risk, approval.Words{EN: v.Reason, ZH: v.ReasonZH}, true
}
