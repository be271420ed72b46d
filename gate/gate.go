package gate

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
)

// Engine is what the gate needs of approval.Engine.
type Engine interface {
	Request(ctx context.Context, r approval.Request) (*approval.Approval, error)
	Wait(ctx context.Context, id approval.ID) (approval.Outcome, error)
	Get(ctx context.Context, id approval.ID) (*approval.Approval, error)
	Evaluate(ctx context.Context, p *approval.Policy, c approval.CallInfo) (approval.Verdict, error)
	// Cancel withdraws a pending approval (a hook that gave up waiting:
	// the agent was told no).
	Cancel(ctx context.Context, id approval.ID, actor approval.UserID, src approval.Source, reason string) (approval.Outcome, error)
	// Store is the approvals' store, shared by the replicas: a callback's
	// delivery is claimed there (Seen), so one replica sends it.
	Store() approval.Store
}

var _ Engine = (*approval.Engine)(nil)

// Deps are what a Gate works with.
type Deps struct {
	// Engine asks, waits and reads approvals.
	Engine Engine
	// Policy returns the approval policy in force (approvers, timeouts,
	// four eyes, grants); called per request, so reloads count.
	Policy func() *approval.Policy
	// Audit records the requests the policy allowed without asking.
	Audit approval.Auditor
	// Scope is how the router keys sessions (approval.session_scope), so
	// that a typed 确认 in the approvers' chat finds the agent's approval.
	Scope channels.Scope
	// Lang is the language of the cards' summaries.
	Lang string
	// Logger receives the gate's log lines; nil: none.
	Logger *slog.Logger
	// Clock times the bounded waits (Wait's d, a hook's hook_timeout);
	// nil: the real clock. The approvals' own expiry is the engine's.
	Clock clock.Clock
	// Getenv and ReadFile read the agents' tokens; nil: the process's.
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

// Agent is one configured agent.
type Agent struct {
	cfg   AgentConfig
	token []byte
	rules *Rules
	slots chan struct{} // in-flight requests (MaxPending)
}

// Name is the agent's name.
func (a *Agent) Name() string { return a.cfg.Name }

// timeout is how long the agent's approvals wait (AgentConfig.Timeout).
func (a *Agent) timeout() time.Duration {
	if a.cfg.Timeout > 0 {
		return a.cfg.Timeout
	}
	return DefaultAgentTimeout
}

// hookTimeout is how long a hook request waits (AgentConfig.HookTimeout).
func (a *Agent) hookTimeout() time.Duration {
	if a.cfg.HookTimeout > 0 {
		return a.cfg.HookTimeout
	}
	return DefaultHookTimeout
}

// Gate answers other agents' requests for approval.
type Gate struct {
	deps   Deps
	agents []*Agent
	log    *slog.Logger
	// senders counts the callback senders running (tests wait on it);
	// sending counts them by delivery, so a retry starts no second one.
	senders sync.WaitGroup
	sendMu  sync.Mutex
	sending map[delivery]int
}

// New builds the gate of the configured agents (Validate's checks apply).
func New(cfgs []AgentConfig, deps Deps) (*Gate, error) {
	if err := Validate(cfgs, deps.Getenv, deps.ReadFile); err != nil {
		return nil, err
	}
	if deps.Engine == nil || deps.Policy == nil || deps.Audit == nil {
		return nil, errors.New("gate.New: Engine, Policy and Audit are required")
	}
	g := &Gate{deps: deps, log: deps.Logger, sending: map[delivery]int{}}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.deps.Clock == nil {
		g.deps.Clock = clock.Real{}
	}
	for _, c := range cfgs {
		tok, _ := token(c, deps.Getenv, deps.ReadFile)
		rules, _ := CompileRules(c.Name, c.Policy)
		n := c.MaxPending
		if n == 0 {
			n = DefaultMaxPending
		}
		g.agents = append(g.agents, &Agent{cfg: c, token: []byte(tok), rules: rules, slots: make(chan struct{}, n)})
	}
	return g, nil
}

// Agents reports whether any agent is configured.
func (g *Gate) Agents() bool { return g != nil && len(g.agents) > 0 }

// Authenticate returns the agent whose token is tok. Every agent's token is
// compared in constant time, so the answer's timing says nothing of which
// token came close.
func (g *Gate) Authenticate(tok string) (*Agent, bool) {
	var found *Agent
	for _, a := range g.agents {
		if subtle.ConstantTimeCompare(a.token, []byte(tok)) == 1 {
			found = a
		}
	}
	return found, found != nil
}

// Errors of the gate, by what the caller should do.
var (
	// ErrInvalid: the request is malformed (no tool_name, no input, input
	// not an object); 400.
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound: no approval of this agent has that id; 404.
	ErrNotFound = errors.New("no such approval")
	// ErrBusy: the agent has MaxPending requests in flight here; 429.
	ErrBusy = errors.New("too many requests waiting")
	// ErrKeyConflict: the request's key (tool_use_id, idempotency_key)
	// already names another request, with another tool or input; 409
	// idempotency_conflict. It comes wrapped in an approval.Error of kind
	// errkind.Conflict.
	ErrKeyConflict = errors.New(codeKeyConflict)
)

// codeKeyConflict names ErrKeyConflict: the HTTP API's error code, the
// audit record's outcome.
const codeKeyConflict = "idempotency_conflict"

// Ask is one request of an agent.
type Ask struct {
	// Tool is the tool the agent wants to run ("Bash").
	Tool string
	// Input is its input, a JSON object.
	Input json.RawMessage
	// Key identifies the request (Claude Code's tool_use_id, or an
	// idempotency key): the same key from the same agent is the same
	// approval, so a retry never makes a second card; the same key with
	// another tool or input is ErrKeyConflict. Empty: every request is
	// new.
	Key string
	// Description is the agent's own words about the call, shown on the
	// card.
	Description string
	// Lane, when set, gives the request a session of its own beside the
	// agent's other approvals (the agent's session and the lane), so
	// that several of its requests wait at once in the approvers' chat,
	// each with its own card and code, where a second request would
	// otherwise supersede the first. A request whose lane holds a
	// pending approval of the same payload waits on that approval (a
	// retry); an ended one is never answered again: a new approval is
	// asked. Key must be empty with a lane. Claude Code's hook (POST
	// /hooks/claude) sets it from the Claude Code session, tool and
	// input.
	Lane string
	// Session and Dir say where the agent asks from: its own session id
	// (Claude Code's session_id; the card shows its first characters)
	// and working directory, in a line on the card above the call,
	// redacted and clipped. Empty: no such line.
	Session, Dir string
	// Program names the program whose session it is on that line
	// ("Claude Code", "Codex").
	Program string
	// Rules and Suggestion, when set, are a standing rule the card offers
	// as a third approve choice ("always allow Bash(npm test:*) for this
	// agent"; standing.go), from the hook input's permission_suggestions:
	// its rules and the suggestion itself, answered back as
	// updatedPermissions when chosen.
	Rules      []approval.PermissionRule
	Suggestion json.RawMessage
}

// Answer is where a request stands.
type Answer struct {
	// ID is the approval's id ("" when the policy allowed the call at
	// once).
	ID approval.ID `json:"approval_id,omitempty"`
	// Status is pending, allowed or denied.
	Status string `json:"status"`
	// Message says why, for a denial (a sentence the agent can act on),
	// or who allowed it.
	Message string `json:"message,omitempty"`
	// Input is what was allowed (the input as shown), for allowed.
	Input json.RawMessage `json:"input,omitempty"`
	// Risk is the call's risk.
	Risk string `json:"risk"`
	// ExpiresAt is when a pending request expires.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// State is the approval's state (pending, executed — allowed —,
	// rejected, expired, superseded, cancelled, failed).
	State approval.State `json:"state,omitempty"`
	// DecidedBy is who decided.
	DecidedBy approval.UserID `json:"decided_by,omitempty"`
	// Always, for allowed, is the standing rule's suggestion when the
	// approver chose always (Ask.Suggestion): Claude Code's hook answers
	// it as updatedPermissions.
	Always json.RawMessage `json:"-"`
}

// Statuses of an Answer.
const (
	StatusPending = "pending"
	StatusAllowed = "allowed"
	StatusDenied  = "denied"
)

// Behavior is the answer as Claude Code's permission prompt tool returns
// it: {"behavior":"allow","updatedInput":{…}} or
// {"behavior":"deny","message":"…"}.
func (a Answer) Behavior() json.RawMessage {
	var v any
	switch a.Status {
	case StatusAllowed:
		v = struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
		}{"allow", a.Input}
	default:
		msg := a.Message
		if a.Status == StatusPending {
			msg = "still waiting for a decision (approval " + string(a.ID) + "); ask again"
		}
		v = struct {
			Behavior string `json:"behavior"`
			Message  string `json:"message"`
		}{"deny", msg}
	}
	b, _ := json.Marshal(v) // strings and a raw object
	return b
}

// callTool is the name of an agent's call in an approval.
func callTool(agent, tool string) string { return agent + "/" + tool }

// Ask asks for approval of one call: at once allowed when the policy lets
// it run without asking (audited), else a pending approval shown on a card.
// A key asked before answers with its approval when the tool and input are
// the same (a retry), else fails with ErrKeyConflict.
func (g *Gate) Ask(ctx context.Context, ag *Agent, q Ask) (Answer, error) {
	ans, _, err := g.ask(ctx, ag, q)
	return ans, err
}

// ask is Ask, also reporting whether this request made the approval:
// false when the policy allowed it at once, and for a retry, which names
// an approval made before (on this replica or another).
func (g *Gate) ask(ctx context.Context, ag *Agent, q Ask) (Answer, bool, error) {
	q.Tool = strings.TrimSpace(q.Tool)
	if q.Tool == "" || len(q.Tool) > 200 || strings.ContainsAny(q.Tool, "/\x00\n") {
		return Answer{}, false, fmt.Errorf("%w: tool_name must be 1 to 200 characters, with no / or line break", ErrInvalid)
	}
	if len(q.Key) > 200 {
		return Answer{}, false, fmt.Errorf("%w: tool_use_id is longer than 200 characters", ErrInvalid)
	}
	if q.Lane != "" && (q.Key != "" || len(q.Lane) > 64 || strings.ContainsAny(q.Lane, "#:\x00\n")) {
		return Answer{}, false, fmt.Errorf("%w: a lane is at most 64 characters, without # or :, and takes no key", ErrInvalid)
	}
	if in := bytes.TrimSpace(q.Input); len(in) == 0 || string(in) == "null" {
		// HashCall would read no input as {}: a call the agent never
		// described, shown as one without arguments.
		return Answer{}, false, fmt.Errorf("%w: input is required: the tool's input as a JSON object ({} for a tool without arguments)", ErrInvalid)
	}
	canon, _, err := approval.HashCall(q.Tool, q.Input)
	if err != nil {
		// Valid JSON that canonicalization refuses: a key twice, which two
		// parsers could read as two different calls.
		why := err
		if inner := errors.Unwrap(err); inner != nil {
			why = inner // without Canonicalize's "canonical json: "
		}
		return Answer{}, false, fmt.Errorf("%w: input: %s; send the input as one JSON object with each key once", ErrInvalid, clip.Runes(why.Error(), 200))
	}
	if len(canon) == 0 || canon[0] != '{' {
		return Answer{}, false, fmt.Errorf("%w: input must be a JSON object", ErrInvalid)
	}
	name := callTool(ag.cfg.Name, q.Tool)
	hash := approval.PayloadHash(name, canon)
	session := g.session(ag)
	if q.Lane != "" {
		session += laneMark + approval.SessionKey(q.Lane)
	}
	risk, pattern := ag.rules.Risk(q.Tool, canon)
	policy := g.deps.Policy()
	v, err := g.deps.Engine.Evaluate(ctx, policy, approval.CallInfo{Session: session, User: g.requester(ag),
		Tool: name, Effect: effectOf(risk), Hash: hash, Confidence: 1, EffectSource: source(ag.cfg.Name, pattern)})
	if err != nil {
		return Answer{}, false, err
	}
	v.Timeout = ag.timeout()
	var questions []approval.Question
	if q.Tool == approval.QuestionTool {
		// A question is for a person, always: no policy or grant answers it.
		if questions, err = approval.ParseQuestions(canon); err != nil {
			return Answer{}, false, fmt.Errorf("%w: %s input: %v", ErrInvalid, approval.QuestionTool, err)
		}
		if len(questions) > approval.MaxAskQuestions {
			return Answer{}, false, fmt.Errorf("%w: %s input: 1 to %d questions, not %d", ErrInvalid, approval.QuestionTool, approval.MaxAskQuestions, len(questions))
		}
		v.NeedsApproval, v.Grant, v.Grantable, v.GrantWindow = true, nil, false, 0
	}
	id := g.id(ag, session, q.Key)
	if q.Key != "" {
		// The key names one request: asked before, this is a retry (that
		// approval's answer) or a conflict, whatever the policy says of
		// the request now.
		if ans, found, err := g.asked(ctx, ag, id, session, name, hash); found || err != nil {
			return ans, false, err
		}
	}
	if v.NeedsApproval && v.Risk != approval.RiskHigh {
		// A standing rule an approver allowed for this agent (standing.go)
		// allows what it matches; a HIGH call always asks.
		gr, err := g.standingFor(ctx, ag, q.Tool, canon)
		if err != nil {
			return Answer{}, false, err
		}
		if gr != nil {
			ans, err := g.allowStanding(ctx, ag, gr, session, name, hash, canon, v.Risk)
			return ans, false, err
		}
	}
	if !v.NeedsApproval {
		if err := g.auditAllowed(ctx, audit.Record{Event: audit.EventAutoAllow, ApprovalID: string(id), Session: string(session), Tool: name,
			PayloadSHA256: hash, Actor: ag.cfg.Name, Source: "agent", Outcome: StatusAllowed, Reason: clip.Runes(v.Reason, 200)}); err != nil {
			g.log.Error("agent request allowed by the policy, but its audit record was not taken; answered unavailable", "agent", ag.cfg.Name, "tool", name, "err", err)
			return Answer{}, false, err
		}
		g.log.Info("agent request allowed by the policy", "agent", ag.cfg.Name, "tool", name, "risk", v.Risk.String())
		return Answer{Status: StatusAllowed, Input: canon, Risk: v.Risk.String(), Message: "allowed by the policy: " + v.Reason}, false, nil
	}
	if q.Lane != "" {
		// The lane's pending approval, asked for this very payload, is
		// this request's too; an ended one is not (its answer was
		// given; a new ask needs a new decision).
		a, err := g.deps.Engine.Store().Pending(ctx, session)
		if err != nil {
			return Answer{}, false, err
		}
		if a != nil && a.State == approval.StatePending && len(a.Calls) == 1 && a.Calls[0].Tool == name {
			was := a.PayloadSHA256
			if a.ProposedSHA256 != "" {
				was = a.ProposedSHA256
			}
			if was == hash {
				return answerOf(a, nil), false, nil
			}
		}
	}
	// What waits for a person counts against the agent's cap; what the
	// policy allows at once does not.
	select {
	case ag.slots <- struct{}{}:
		defer func() { <-ag.slots }()
	default:
		return Answer{}, false, ErrBusy
	}
	// The card's words in both languages, so each card of the approval
	// says them in its own (Approval.SummaryIn, PreviewIn).
	say := func(lang string) (summary, preview string) {
		if questions != nil {
			summary, preview = questionPreview(questions, lang)
			summary = words.In(lang, words.QuestionAsks, ag.cfg.Name, summary)
		} else {
			summary, preview = Preview(q.Tool, canon, lang)
			summary = words.In(lang, words.GateAsks, ag.cfg.Name, summary)
		}
		if d := redact.Clean(strings.TrimSpace(q.Description), 300); d != "" {
			preview = d + "\n\n" + preview
		}
		if q.Session != "" || q.Dir != "" {
			sess := redact.Clean(clip.FirstLine(q.Session), 8)
			dir := redact.Clean(clip.FirstLine(q.Dir), 160)
			preview = words.In(lang, words.GateHookContext, q.Program, sess, dir) + "\n\n" + preview
		}
		return summary, preview
	}
	summary, preview := say("en")
	summaryZH, previewZH := say("zh")
	channel, chat := g.place(ag)
	var standing *approval.Standing
	if len(q.Rules) > 0 {
		standing = &approval.Standing{Session: approval.RulesSession(channel, chat), Agent: ag.cfg.Name, Rules: q.Rules,
			Window: ag.ruleWindow(), Suggestion: q.Suggestion}
	}
	a, err := g.deps.Engine.Request(ctx, approval.Request{ID: id, Session: session, Channel: channel, ChatID: chat,
		Requester: g.requester(ag), Calls: []approval.Call{{Tool: name, Args: canon, Summary: summary, SummaryZH: summaryZH, CallID: q.Key}},
		Verdict: v, Summary: summary, Preview: preview, SummaryZH: summaryZH, PreviewZH: previewZH,
		About: approval.Say(words.AboutGate, ag.cfg.Name), Standing: standing})
	if approval.KindOf(err) == errkind.Conflict && q.Key != "" {
		// Asked meanwhile with this key, on this replica or another (the
		// store refuses a second approval of an id): the same request or
		// a conflict, never the other request's answer.
		if ans, found, err := g.asked(ctx, ag, id, session, name, hash); found || err != nil {
			return ans, false, err
		}
		return Answer{}, false, ErrNotFound
	}
	if err != nil {
		return Answer{}, false, err
	}
	g.log.Info("agent request waits for approval", "agent", ag.cfg.Name, "approval_id", a.ID, "tool", name, "risk", a.Risk.String())
	return answerOf(a, nil), true, nil
}

// asked looks up the approval of ag's request key (its id): found, it
// answers where that approval stands when it was asked for the same tool
// and input (payload hash hash of call name), or fails with ErrKeyConflict
// (audited) when it was asked for another. found is false when the key
// names no approval yet.
func (g *Gate) asked(ctx context.Context, ag *Agent, id approval.ID, session approval.SessionKey, name, hash string) (ans Answer, found bool, err error) {
	a, err := g.own(ctx, ag, id)
	if errors.Is(err, ErrNotFound) {
		return Answer{}, false, nil
	}
	if err != nil {
		return Answer{}, true, err
	}
	// An approver's edit binds the approval to the edited call; the key
	// still names the call as it was asked.
	was := a.PayloadSHA256
	if a.ProposedSHA256 != "" {
		was = a.ProposedSHA256
	}
	if was == hash {
		return answerOf(a, a.Outcome), true, nil
	}
	g.deps.Audit.Append(audit.Record{Event: audit.EventTampered, ApprovalID: string(id), Session: string(session), Tool: name,
		PayloadSHA256: hash, Actor: ag.cfg.Name, Source: "agent", Outcome: codeKeyConflict,
		Error: "the request's key names approval " + string(id) + " of payload " + approval.ShortHash(was) + "; nothing was asked"})
	g.log.Warn("an agent reused a request key with another tool or input; refused", "agent", ag.cfg.Name, "approval_id", id, "tool", name)
	return Answer{}, true, approval.E("gate.Ask", errkind.Conflict, id, ErrKeyConflict)
}

// Get returns where an approval of the agent stands.
func (g *Gate) Get(ctx context.Context, ag *Agent, id approval.ID) (Answer, error) {
	a, err := g.own(ctx, ag, id)
	if err != nil {
		return Answer{}, err
	}
	return answerOf(a, a.Outcome), nil
}

// Wait waits up to d for the agent's approval id to end and returns where
// it stands then (pending when d passed first). The approval stays as it
// is when the wait ends (ctx or d): a later Wait or Get finds it.
func (g *Gate) Wait(ctx context.Context, ag *Agent, id approval.ID, d time.Duration) (Answer, error) {
	a, err := g.own(ctx, ag, id)
	if err != nil {
		return Answer{}, err
	}
	if a.State.Terminal() || d <= 0 {
		return answerOf(a, a.Outcome), nil
	}
	select {
	case ag.slots <- struct{}{}:
		defer func() { <-ag.slots }()
	default:
		return Answer{}, ErrBusy
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := g.deps.Clock.NewTimer(d)
	defer timer.Stop()
	go func() {
		select {
		case <-timer.C():
			cancel(errWaitOver)
		case <-wctx.Done():
		}
	}()
	o, err := g.deps.Engine.Wait(wctx, id)
	if err != nil {
		if ctx.Err() == nil && context.Cause(wctx) == errWaitOver {
			return answerOf(a, nil), nil
		}
		return Answer{}, err
	}
	if a, err = g.deps.Engine.Get(ctx, id); err != nil {
		return Answer{}, err
	}
	return answerOf(a, &o), nil
}

// errWaitOver ends a Wait whose d passed.
var errWaitOver = errors.New("the wait is over")

// own reads the approval id and checks it is one of ag's.
func (g *Gate) own(ctx context.Context, ag *Agent, id approval.ID) (*approval.Approval, error) {
	if !id.Valid() {
		return nil, ErrNotFound
	}
	a, err := g.deps.Engine.Get(ctx, id)
	if approval.KindOf(err) == errkind.NotFound {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if len(a.Calls) != 1 || !strings.HasPrefix(a.Calls[0].Tool, ag.cfg.Name+"/") {
		return nil, ErrNotFound // another agent's, or hitlbot's own: not there for this agent
	}
	return a, nil
}

// answerOf says where approval a stands, with its outcome o when it ended.
func answerOf(a *approval.Approval, o *approval.Outcome) Answer {
	ans := Answer{ID: a.ID, Risk: a.Risk.String(), ExpiresAt: a.ExpiresAt.UTC(), State: a.State, DecidedBy: a.DecidedBy}
	if o == nil || o.Status == "" {
		ans.Status = StatusPending
		return ans
	}
	ans.DecidedBy = o.DecidedBy
	switch o.Status {
	case approval.StatusExecuted, approval.StatusReplayed:
		ans.Status, ans.Input = StatusAllowed, a.Calls[0].Args
		ans.Message = "allowed by " + string(o.DecidedBy) + took(a)
		if a.Grant.For(a) == approval.GrantAlways {
			ans.Always = a.Standing.Suggestion
			ans.Message += ", who also allowed the standing rule " + a.Standing.Words() + " for this agent"
		}
	default:
		ans.Status, ans.Message = StatusDenied, denial(a, *o)
	}
	return ans
}

// denial is the sentence a denied agent reads: what happened and what it
// may do (for the model driving it; English).
func denial(a *approval.Approval, o approval.Outcome) string {
	switch o.Status {
	case approval.StatusRejected:
		s := "rejected by " + string(o.DecidedBy) + took(a)
		if a.Comment != "" {
			s += ": " + a.Comment
		}
		return s + ". Do not run it; ask the user what to do instead."
	case approval.StatusExpired:
		life := a.ExpiresAt.Sub(a.CreatedAt)
		if life >= time.Second {
			life = life.Round(time.Second)
		}
		if a.IsQuestion() {
			return fmt.Sprintf("expired: nobody answered the question within %s. Go on without the answer, or ask again if it is still needed.", life)
		}
		return fmt.Sprintf("expired: nobody decided within %s. Do not run it; ask again if it is still needed.", life)
	case approval.StatusSuperseded:
		return "superseded: a newer request for approval replaced this one in the approvers' chat. Do not run it; ask again if it is still needed."
	case approval.StatusCancelled:
		return "cancelled before anyone decided. Do not run it."
	}
	d := strings.TrimSpace(o.Detail)
	if d == "" {
		d = string(o.Status)
	}
	return "not allowed: " + d + ". Do not run it."
}

// took says how long the person took to decide a: " after 2m14s" (whole
// seconds), from its request to its decision by the engine's clock; ""
// when the record holds no decision time.
func took(a *approval.Approval) string {
	if a.DecidedAt.IsZero() || a.DecidedAt.Before(a.CreatedAt) {
		return ""
	}
	return " after " + a.DecidedAt.Sub(a.CreatedAt).Truncate(time.Second).String()
}

// laneMark joins an agent's session and a request's lane (Ask.Lane).
const laneMark = "#lane:"

// session is the session key of ag's approvals: the approvers' chat's, as
// the router keys it, and the agent's name, so that agents sharing an
// approvers' chat do not replace each other's pending approval (one
// agent's second request while one waits still does, unless it asks in a
// lane of its own, Ask.Lane, as Claude Code's hook requests do: each
// then has its own approval, card and code). A typed 确认 in the
// chat finds it as the only approval there its sender may decide, or by
// its code (确认 <code>).
func (g *Gate) session(ag *Agent) approval.SessionKey {
	channel, chat := g.place(ag)
	return approval.AgentSession(channels.SessionKey(g.deps.Scope, channel, chat, g.requester(ag), ""), ag.cfg.Name)
}

// place is the channel and chat of ag's cards. An API approval's chat is
// tenant/requester/agent-<name>, the API's conversation form.
func (g *Gate) place(ag *Agent) (string, string) {
	p := ag.cfg.ApproveIn
	if p.Channel == "api" {
		return "api", apiTenant(p) + "/" + ag.cfg.Requester + "/agent-" + ag.cfg.Name
	}
	return p.Channel, p.ChatID
}

// requester is the user id of ag's requester as the approvers' channel
// names people: the API's are tenant/user.
func (g *Gate) requester(ag *Agent) approval.UserID {
	if ag.cfg.Requester == "" {
		return ""
	}
	if ag.cfg.ApproveIn.Channel == "api" {
		return approval.UserID(apiTenant(ag.cfg.ApproveIn) + "/" + ag.cfg.Requester)
	}
	return approval.UserID(ag.cfg.Requester)
}

// apiTenant is the tenant of an api place: the API's "default" when none.
func apiTenant(p Place) string {
	if p.ChatID == "" {
		return "default"
	}
	return p.ChatID
}

// id is the approval id of ag's request key: derived from the key with the
// agent's token (so a retry finds the same approval and nobody else can
// guess it), or new when there is no key.
func (g *Gate) id(ag *Agent, session approval.SessionKey, key string) approval.ID {
	if key == "" {
		return approval.NewID(session)
	}
	m := hmac.New(sha256.New, ag.token)
	m.Write([]byte("hitlbot approval id\x00" + key))
	return approval.ID("ap_" + approval.Shard(session) + "_" + hex.EncodeToString(m.Sum(nil)[:16]))
}

// effectOf is the effect whose risk is r.
func effectOf(r approval.Risk) approval.Effect {
	switch r {
	case approval.RiskLow:
		return approval.EffectRead
	case approval.RiskMedium:
		return approval.EffectWrite
	}
	return approval.EffectDestructive
}

// source says where a call's risk came from: the agent's policy pattern.
func source(agent, pattern string) approval.Words {
	if pattern == "" {
		return approval.Say(words.GateRiskNoPattern, agent)
	}
	return approval.Say(words.GateRiskPattern, agent, pattern)
}

// auditTimeout bounds the wait for an auto_allow record to be written.
const auditTimeout = 10 * time.Second

// auditAllowed records a request the policy allowed without asking, and
// fails (kind unavailable) unless the trail took the record and, when it
// writes in the background, wrote it within auditTimeout: an agent is
// never told to go on with a step the audit trail does not hold, as the
// engine runs no approved call without its confirm record.
func (g *Gate) auditAllowed(ctx context.Context, r audit.Record) error {
	const op = "gate.Ask"
	if t, ok := g.deps.Audit.(approval.Refuser); ok {
		if err := t.TryAppend(r); err != nil {
			return approval.E(op, errkind.Unavailable, "", err)
		}
	} else {
		g.deps.Audit.Append(r)
	}
	f, ok := g.deps.Audit.(approval.Flusher)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, auditTimeout)
	defer cancel()
	if err := f.Flush(ctx); err != nil {
		return approval.E(op, errkind.Unavailable, "", err)
	}
	return nil
}
