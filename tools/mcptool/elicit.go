package mcptool

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/approval"
)

// Elicitation. A server may ask for information from a person while one
// of its tools runs (elicitation/create). hitlbot declares form mode when
// Options.Elicit is set, and asks it for the call it belongs to. On the
// 2026-07-28 revision the request comes in the call's result (multi
// round-trip, SEP-2322) and the SDK hands it over in the call's own
// context; on a legacy revision it is a request of the server's on the
// session, and it belongs to the one call of that server in flight. That
// context carries who the call runs for and where (approval.Origin) and
// its deadline, so the question never outlives the call. It fails closed, with the reason logged: no call in
// flight (no turn behind it), several (which one asks cannot be told),
// URL mode, or a question that could not be asked, is a decline; an
// answer that did not come in time is a cancel. The message and every
// string of the schema have the server's secrets hidden before anything
// reads them; approval.ElicitArgs cleans and bounds them as untrusted.

// begin records a call in flight; the returned func ends it.
func (s *server) begin(ctx context.Context) func() {
	ref := &ctx
	s.runMu.Lock()
	if s.running == nil {
		s.running = map[*context.Context]struct{}{}
	}
	s.running[ref] = struct{}{}
	s.runMu.Unlock()
	return func() {
		s.runMu.Lock()
		delete(s.running, ref)
		s.runMu.Unlock()
	}
}

// runningCall is the context of the one call in flight, and how many are.
func (s *server) runningCall() (context.Context, int) {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	for ref := range s.running {
		return *ref, len(s.running)
	}
	return nil, 0
}

// elicit is the session's ElicitationHandler.
func (s *server) elicit(hctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	decline := &mcp.ElicitResult{Action: approval.ElicitDecline}
	p := req.Params
	if p == nil {
		return decline, nil
	}
	if p.Mode != "" && p.Mode != "form" {
		s.log.Warn("mcp server: elicitation declined: only form mode is supported", "mode", s.scrub.Hide(p.Mode))
		return decline, nil
	}
	ctx := hctx
	if _, ok := approval.OriginOf(hctx); !ok {
		// A server→client request of a legacy revision: its context is
		// the session's. The call it belongs to is the one in flight.
		call, n := s.runningCall()
		switch {
		case n == 0:
			s.log.Warn("mcp server: elicitation declined: none of its tool calls runs, so no chat to ask in")
			return decline, nil
		case n > 1:
			s.log.Warn("mcp server: elicitation declined: several of its tool calls run, and which one asks cannot be told", "calls", n)
			return decline, nil
		}
		// The call's context: its origin and its deadline; ended too
		// when the server withdraws the request (or the session ends).
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(call)
		defer cancel()
		stop := context.AfterFunc(hctx, cancel)
		defer stop()
	}
	schema, err := s.hideSchema(p.RequestedSchema)
	if err != nil {
		s.log.Warn("mcp server: elicitation declined: its schema is not JSON", "err", s.scrub.Hide(err.Error()))
		return decline, nil
	}
	ans, err := s.opts.Elicit(ctx, s.cfg.Name, s.scrub.Hide(p.Message), schema)
	if err != nil {
		s.log.Warn("mcp server: elicitation not answered", "action", ans.Action, "approval_id", ans.ID, "why", s.scrub.Hide(err.Error()))
	} else {
		s.log.Info("mcp server: elicitation answered", "action", ans.Action, "approval_id", ans.ID)
	}
	switch ans.Action {
	case approval.ElicitAccept:
		return &mcp.ElicitResult{Action: ans.Action, Content: ans.Content}, nil
	case approval.ElicitCancel:
		return &mcp.ElicitResult{Action: ans.Action}, nil
	}
	return decline, nil
}

// hideSchema is schema with the server's secrets hidden in every string.
func (s *server) hideSchema(schema any) (any, error) {
	if schema == nil {
		return nil, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return hideStrings(s, out), nil
}

// hideStrings hides the server's secrets in every string of v, keys too.
func hideStrings(s *server, v any) any {
	switch x := v.(type) {
	case string:
		return s.scrub.Hide(x)
	case []any:
		for i := range x {
			x[i] = hideStrings(s, x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[s.scrub.Hide(k)] = hideStrings(s, e)
		}
		return out
	}
	return v
}
