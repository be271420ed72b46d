package approval

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/hitlbot/hitlbot/words"
	"strings"
	"time"
)

// ID identifies one approval. It has the form "ap_" + 8 hex digits naming the
// session's shard + "_" + 32 hex digits of randomness (128 bits). The shard
// part lets the Redis store keep an approval, its session's pending pointer
// and its result cache in one hash slot, so one Lua script can touch them all
// on Redis Cluster.
type ID string

// SessionKey names a conversation: "channel:chat_id", optionally with
// ":user_id" or ":thread_id" depending on the session scope.
type SessionKey string

// agentMark joins an approvers' chat's session and another agent's name in
// the session of that agent's approvals (AgentSession).
const agentMark = "#agent:"

// AgentSession is the session of the approvals another agent (package
// gate) asks in the chat whose session is chat: one per agent, so agents
// sharing an approvers' chat do not replace each other's pending approval.
func AgentSession(chat SessionKey, agent string) SessionKey {
	return chat + agentMark + SessionKey(agent)
}

// OfAgent reports whether s is an AgentSession: no conversation of the
// chat's own is behind it, so a bare typed 确认 in the chat may name its
// approval (channels.Router).
func (s SessionKey) OfAgent() bool { return strings.Contains(string(s), agentMark) }

// UserID names a person on a platform (Feishu open_id, DingTalk staff id, a
// web or API user). It is only meaningful together with the channel.
type UserID string

// NewID returns a fresh random approval id for an approval in session s.
func NewID(s SessionKey) ID {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("approval: crypto/rand failed: " + err.Error())
	}
	return ID("ap_" + Shard(s) + "_" + hex.EncodeToString(b[:]))
}

// Shard returns the 8-hex-digit shard tag of a session key.
func Shard(s SessionKey) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// Shard returns the shard tag embedded in the id, and whether the id is well formed.
func (id ID) Shard() (string, bool) {
	s := string(id)
	if len(s) != 3+8+1+32 || !strings.HasPrefix(s, "ap_") || s[11] != '_' {
		return "", false
	}
	if !isHex(s[3:11]) || !isHex(s[12:]) {
		return "", false
	}
	return s[3:11], true
}

// Valid reports whether id has the form NewID produces.
func (id ID) Valid() bool { _, ok := id.Shard(); return ok }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Risk grades how much harm a tool call can do.
type Risk int

// Risks, from harmless to destructive.
const (
	RiskLow Risk = iota
	RiskMedium
	RiskHigh
)

var riskNames = [...]string{"LOW", "MEDIUM", "HIGH"}

func (r Risk) String() string {
	if r < 0 || int(r) >= len(riskNames) {
		return fmt.Sprintf("Risk(%d)", int(r))
	}
	return riskNames[r]
}

// ParseRisk parses LOW, MEDIUM or HIGH (any case).
func ParseRisk(s string) (Risk, error) {
	for i, n := range riskNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Risk(i), nil
		}
	}
	return 0, fmt.Errorf("unknown risk %q (want LOW, MEDIUM or HIGH)", s)
}

// MarshalText encodes the risk as its name.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText decodes a risk name.
func (r *Risk) UnmarshalText(b []byte) error {
	v, err := ParseRisk(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Effect is what a tool call does to the world (read, write or destroy);
// it gives the default risk. It is not an error kind (see errkind.Kind).
type Effect string

// Tool effects.
const (
	EffectRead        Effect = "read"        // observes only: LOW
	EffectWrite       Effect = "write"       // changes state that can be changed back: MEDIUM
	EffectDestructive Effect = "destructive" // deletes or overwrites: HIGH
)

// Risk returns the default risk of the effect; unknown effects are HIGH.
func (e Effect) Risk() Risk {
	switch e {
	case EffectRead:
		return RiskLow
	case EffectWrite:
		return RiskMedium
	default:
		return RiskHigh
	}
}

// State is where an approval is in its life.
//
//	pending -> claimed -> executed | failed | frozen
//	pending -> rejected | expired | superseded | cancelled
type State string

// States.
const (
	StatePending    State = "pending"
	StateClaimed    State = "claimed"
	StateExecuted   State = "executed"
	StateFailed     State = "failed"
	StateFrozen     State = "frozen"
	StateRejected   State = "rejected"
	StateExpired    State = "expired"
	StateSuperseded State = "superseded"
	StateCancelled  State = "cancelled"
)

// Terminal reports whether no further transition can leave s.
func (s State) Terminal() bool {
	switch s {
	case StatePending, StateClaimed:
		return false
	}
	return true
}

// Status is the outcome of a decision as the agent, the cards, the API and
// the audit trail see it.
type Status string

// Outcome statuses.
const (
	StatusExecuted       Status = "executed"        // the tool ran and succeeded
	StatusReplayed       Status = "replayed"        // the same call ran before; its cached result is returned
	StatusRejected       Status = "rejected"        // a person declined
	StatusTampered       Status = "tampered"        // the decision named another payload than the one stored
	StatusAlreadyDecided Status = "already_decided" // someone else decided first
	StatusSuperseded     Status = "superseded"      // a newer approval in the session replaced this one
	StatusFrozen         Status = "frozen"          // the tool's effect is unknown; never re-run by itself
	StatusExpired        Status = "expired"         // nobody decided in time
	StatusMissing        Status = "missing"         // no such approval
	StatusFailed         Status = "failed"          // the tool did not run, or reported a failure
	StatusUnauthorized   Status = "unauthorized"    // the actor may not decide this approval
	StatusCancelled      Status = "cancelled"       // withdrawn (by the requester, an operator or a failed card)
	// StatusAwaitingQuorum answers an approve that counted towards a
	// quorum not yet reached (Outcome.Approvals of Outcome.Quorum): the
	// approval still waits, for more approvers.
	StatusAwaitingQuorum Status = "awaiting_quorum"
)

// Action statuses. An agent's action (one tool call of a turn, agent.Action,
// shown by the HTTP API) ends in an outcome status above, or in one of these
// two, which are never an approval's outcome: no approval ends with them, so
// they are not in AllStatuses, have no outcome_text and no card.
const (
	StatusInvalid Status = "invalid" // the call was malformed (unknown tool, arguments against the schema): nothing ran, nobody was asked
	StatusPending Status = "pending" // the turn stopped waiting for the call's approval, which lives on; its outcome is recorded when it comes
)

// AllStatuses lists every outcome status, in a fixed order (not the action
// statuses StatusInvalid and StatusPending).
var AllStatuses = []Status{
	StatusExecuted, StatusReplayed, StatusRejected, StatusTampered, StatusAlreadyDecided,
	StatusSuperseded, StatusFrozen, StatusExpired, StatusMissing, StatusFailed,
	StatusUnauthorized, StatusCancelled, StatusAwaitingQuorum,
}

// Final reports whether an approval with this status has ended (as opposed to
// statuses that describe a refused attempt on an approval that lives on).
func (s Status) Final() bool {
	switch s {
	case StatusUnauthorized, StatusTampered, StatusMissing, StatusAlreadyDecided, StatusPending, StatusAwaitingQuorum:
		return false
	}
	return true
}

// MaxCalls bounds the tool calls of one model round, and so of one batch
// approval: the agent loop answers a round's calls past it "not run"
// (agent), and a card's button value may announce at most that many
// (cards.MaxCardCalls), so every batch can be decided by a click.
const MaxCalls = 64

// Call is one tool call that waits for approval. A batch approval holds
// several; a plain one holds exactly one.
type Call struct {
	// Tool is the registered tool name.
	Tool string `json:"tool"`
	// Args is the canonical JSON of the arguments (see Canonicalize).
	Args json.RawMessage `json:"args"`
	// PayloadSHA256 is the call's Hash: PayloadHash(Tool, Args), or with
	// a Definition PinnedHash(Tool, Args, Definition).
	PayloadSHA256 string `json:"payload_sha256"`
	// Definition, for a tool another program defines (an MCP server's),
	// is the digest of the tool's definition when the call was made; the
	// payload hash pins it, so what is approved is that tool as shown.
	Definition string `json:"definition,omitempty"`
	// Summary is a short human description of the call (the tool's preview).
	Summary string `json:"summary,omitempty"`
	// SummaryZH is Summary in Chinese, when the tool said its preview in
	// both languages (see SummaryIn).
	SummaryZH string `json:"summary_zh,omitempty"`
	// CallID is the model's id for this call, if any, so the result can be
	// matched back to it.
	CallID string `json:"call_id,omitempty"`
	// Edited, set when an approver changed the call's arguments before
	// approving it (Decision.Edits), says what changed, key by key
	// ("limit: 1000 → 10"), for the model and the cards; empty for a
	// call as it was proposed.
	Edited string `json:"edited,omitempty"`
}

// Hash returns the payload hash the call's tool, arguments and definition
// give; Args must be canonical.
func (c Call) Hash() string {
	if c.Definition != "" {
		return PinnedHash(c.Tool, c.Args, c.Definition)
	}
	return PayloadHash(c.Tool, c.Args)
}

// CardRef is one message that shows an approval: a Feishu message id, a
// DingTalk outTrackId, a web step id.
type CardRef struct {
	// Channel is the channel that sent the card ("feishu", "dingtalk", "web", ...).
	Channel string `json:"channel"`
	// ChatID is the chat the card was sent to.
	ChatID string `json:"chat_id,omitempty"`
	// MessageID is the platform's handle for updating the card.
	MessageID string `json:"message_id"`
	// Private marks a card shown only to the people who may see a private
	// approval (Approval.MaySee): its whole form, with buttons. A card of
	// a private approval without it is the redacted one its chat sees.
	Private bool `json:"private,omitempty"`
}

// Approval is the durable record of one request for a person's decision.
type Approval struct {
	ID ID `json:"id"`
	// Session is the conversation the approval belongs to.
	Session SessionKey `json:"session"`
	// Channel and ChatID locate the conversation.
	Channel string `json:"channel,omitempty"`
	ChatID  string `json:"chat_id,omitempty"`
	// Requester is the person whose message led to the call;
	// RequesterName their name as the platform gave it with the message
	// (DingTalk's senderNick), empty when it gave none.
	Requester     UserID `json:"requester"`
	RequesterName string `json:"requester_name,omitempty"`
	// Approvers says who may decide.
	Approvers ApproverRule `json:"approvers"`
	// ApproveIn, when set, is the approvers' chat (approve_in): the card
	// with its buttons is there, the requester's chat (Channel, ChatID)
	// shows a status, and the approver rule "chat" means that chat (see
	// InChat). Nil: the approval is decided in its own chat.
	ApproveIn *Place `json:"approve_in,omitempty"`
	// Escalation is its timed escalation, in order (copied from the
	// policy when it was requested), and Escalated how many of its steps
	// have been taken: the approvers of those steps may decide too (see
	// AllowsIn), and their chats show cards of it.
	Escalation []Escalation `json:"escalation,omitempty"`
	Escalated  int          `json:"escalated,omitempty"`
	// Reminders are the moments of its window (CreatedAt to ExpiresAt),
	// as fractions of it in ascending order (copied from
	// EngineConfig.Reminders when it was requested), at which a reminder
	// goes to the people who may decide it; Reminded how many of them are
	// behind it (sent, or passed over because a later one was due too).
	// See NextReminder and Store.Remind.
	Reminders []float64 `json:"reminders,omitempty"`
	Reminded  int       `json:"reminded,omitempty"`
	// Privacy is who sees the approval in a group chat (the policy's
	// privacy rule when it was asked); Group reports that its chat is a
	// group chat, not a 1:1 chat. See Private and MaySee.
	Privacy Privacy `json:"privacy,omitempty"`
	Group   bool    `json:"group,omitempty"`
	// Calls are the tool calls to run on approval (one, or several for a
	// batch: at most MaxCalls).
	Calls []Call `json:"calls"`
	// PayloadSHA256 covers every call (PayloadHash for one call, BatchHash for several).
	PayloadSHA256 string `json:"payload_sha256"`
	// Risk is the highest risk among the calls.
	Risk Risk `json:"risk"`
	// Summary says in one line what will happen; Preview shows the detail
	// (sanitised: secrets redacted). Reason is why the policy asked (and
	// gave the call its risk: "affects 29 rows, more than 20"), ReasonZH
	// the same in Chinese; see ReasonIn.
	Summary  string `json:"summary"`
	Preview  string `json:"preview,omitempty"`
	Reason   string `json:"reason,omitempty"`
	ReasonZH string `json:"reason_zh,omitempty"`
	// SummaryZH and PreviewZH are Summary and Preview in Chinese, when the
	// tools said their previews in both languages (see SummaryIn,
	// PreviewIn); empty, the English is shown.
	SummaryZH string `json:"summary_zh,omitempty"`
	PreviewZH string `json:"preview_zh,omitempty"`
	// About says what the call does, written for the person who approves
	// it (not the model's tool description), AboutZH the same in Chinese;
	// see AboutIn. Empty for a batch and for tools that say nothing.
	About   string `json:"about,omitempty"`
	AboutZH string `json:"about_zh,omitempty"`
	// CreatedAt and ExpiresAt bound the time a decision is accepted.
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// IdempotencyKey names the effect: a second approval with the same key
	// and payload replays the first one's result instead of running again.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// GrantWindow, when positive, grants the requester's session this long
	// without asking again for the same calls once they have executed
	// (MEDIUM risk only; set from the policy verdict).
	GrantWindow time.Duration `json:"grant_window,omitempty"`
	// Standing, on another agent's approval (package gate), is the
	// standing rule its card offers as a third approve choice ("always
	// allow Bash(npm test:*) for this agent"); nil when none is offered.
	// It never changes after Put, so a decision choosing it
	// (GrantAlways) is checked against the stored record.
	Standing *Standing `json:"standing,omitempty"`
	// State is the life-cycle state.
	State State `json:"state"`
	// Cards are the messages that show this approval.
	Cards []CardRef `json:"cards,omitempty"`
	// DecidedBy, DecidedAt and DecidedVia record the decision (or the expiry).
	DecidedBy  UserID    `json:"decided_by,omitempty"`
	DecidedAt  time.Time `json:"decided_at,omitzero"`
	DecidedVia Source    `json:"decided_via,omitempty"`
	// Comment is what the decider wrote, if anything.
	Comment string `json:"comment,omitempty"`
	// Grant is the grant choice the approver made (once, session), as the
	// claim got it; empty when none was made (GrantChoice.For says what
	// applies).
	Grant GrantChoice `json:"grant,omitempty"`
	// ProposedSHA256 is the payload hash of the calls as they were
	// proposed, kept when an edit (Decision.Edits) bound the approval to
	// the edited calls' hash (PayloadSHA256 then); empty otherwise.
	ProposedSHA256 string `json:"proposed_sha256,omitempty"`
	// Trace is the W3C traceparent of the span that requested the
	// approval (tracing on; else empty): the spans of its decision, claim
	// and run, on whichever replica, are its children, and its audit
	// records name its trace id. Set by Engine.Request.
	Trace string `json:"trace,omitempty"`
	// Votes are the approvals counted towards the rule's quorum
	// (Approvers.Quorum above 1), in the order they came: the one that
	// reached it is the last. Empty when one approval decides.
	Votes []Vote `json:"votes,omitempty"`
	// Verdicts, set by a per-call decision that approved some calls and
	// rejected others, says which calls run (see Verdicts); empty when
	// the decision took every call alike.
	Verdicts Verdicts `json:"verdicts,omitempty"`
	// Outcome is set once the approval has ended.
	Outcome *Outcome `json:"outcome,omitempty"`

	// retrying marks, in the engine only, a record claimed again by a
	// retry resolution: its run's outcome carries ResolveRetry.
	retrying bool
	// auditRefused marks, in the engine only, a record one of whose audit
	// records the trail refused (its queue full): none of its calls runs.
	auditRefused bool
}

// Tool returns the name of the first call's tool, or "batch" for a batch.
func (a *Approval) Tool() string {
	switch len(a.Calls) {
	case 0:
		return ""
	case 1:
		return a.Calls[0].Tool
	}
	return "batch"
}

// ReasonIn returns why the policy asked, in lang ("zh", "zh-CN" …, else
// English).
func (a *Approval) ReasonIn(lang string) string {
	return Words{EN: a.Reason, ZH: a.ReasonZH}.In(lang)
}

// SummaryIn returns the summary in lang (Chinese when it was said in
// Chinese, else English).
func (a *Approval) SummaryIn(lang string) string {
	return Words{EN: a.Summary, ZH: a.SummaryZH}.In(lang)
}

// PreviewIn returns the preview in lang, as SummaryIn.
func (a *Approval) PreviewIn(lang string) string {
	return Words{EN: a.Preview, ZH: a.PreviewZH}.In(lang)
}

// AboutIn returns what the call does for its approver in lang, as
// SummaryIn.
func (a *Approval) AboutIn(lang string) string {
	return Words{EN: a.About, ZH: a.AboutZH}.In(lang)
}

// SummaryIn returns the call's summary in lang, as Approval.SummaryIn.
func (c Call) SummaryIn(lang string) string {
	return Words{EN: c.Summary, ZH: c.SummaryZH}.In(lang)
}

// Clone returns a deep copy.
func (a *Approval) Clone() *Approval {
	if a == nil {
		return nil
	}
	c := *a
	c.Calls = append([]Call(nil), a.Calls...)
	c.Cards = append([]CardRef(nil), a.Cards...)
	c.Approvers.Users = append([]UserID(nil), a.Approvers.Users...)
	c.Votes = append([]Vote(nil), a.Votes...)
	if a.Reminders != nil {
		c.Reminders = append([]float64(nil), a.Reminders...)
	}
	c.Escalation = make([]Escalation, len(a.Escalation))
	for i, st := range a.Escalation {
		st.Approvers.Users = append([]UserID(nil), st.Approvers.Users...)
		c.Escalation[i] = st
	}
	if len(a.Escalation) == 0 {
		c.Escalation = nil
	}
	if a.ApproveIn != nil {
		p := *a.ApproveIn
		c.ApproveIn = &p
	}
	if a.Outcome != nil {
		o := a.Outcome.Clone()
		c.Outcome = &o
	}
	if a.Standing != nil {
		st := a.Standing.Clone()
		c.Standing = &st
	}
	return &c
}

// ApproversIn says who may approve a (ApproverRule.DescribeIn) to someone
// who decided in chatID of channel: outside the approvers' chat of an
// approval that has one, mode chat is "anyone in the approvers' chat".
func (a *Approval) ApproversIn(lang, channel, chatID string) string {
	s := a.Approvers.DescribeIn(lang)
	if a.ApproveIn != nil && !a.InChat(channel, chatID) {
		s = a.Approvers.DescribeElsewhereIn(lang)
	}
	if who := a.EscalatedWhoIn(lang); who != "" {
		s += words.In(lang, words.ApproversAlso, who)
	}
	return s
}

// Vote is one person's approval counted towards a quorum.
type Vote struct {
	// By is who approved, Via where, At when (the deciding replica's
	// clock).
	By  UserID    `json:"by"`
	Via Source    `json:"via,omitempty"`
	At  time.Time `json:"at"`
	// Comment is what they wrote, if anything (cleaned as a decision's).
	Comment string `json:"comment,omitempty"`
}

// Verb is what a decision asks for.
type Verb string

// Verbs.
const (
	Approve Verb = "approve"
	Reject  Verb = "reject"
	// Resolve settles a frozen approval (its effect unknown) with
	// Decision.Resolution; see Engine.Decide.
	Resolve Verb = "resolve"
)

// Source is where a decision came from.
type Source string

// Sources.
const (
	SourceCard   Source = "card"   // a button on a Feishu or DingTalk card
	SourceReply  Source = "reply"  // a typed 确认 / 取消
	SourceAPI    Source = "api"    // the HTTP API
	SourceWeb    Source = "web"    // the web chat
	SourceCLI    Source = "cli"    // the terminal chat
	SourceSystem Source = "system" // expiry, supersession, cancellation by the process
)

// Decision is one person's answer to an approval.
type Decision struct {
	// Verb is approve or reject.
	Verb Verb `json:"verb"`
	// Actor is who decided.
	Actor UserID `json:"actor"`
	// Source is where the decision came from.
	Source Source `json:"source"`
	// PayloadSHA256 is the payload the actor saw. Cards carry it in the
	// button value; for a typed reply the router fills in the hash of the
	// approval it showed. It must match the stored one.
	PayloadSHA256 string `json:"payload_sha256"`
	// Comment is an optional note from the actor (for a resolution that
	// is done, the result as the actor recorded it).
	Comment string `json:"comment,omitempty"`
	// Resolution is what a Resolve decision settles a frozen approval
	// with (done, retry or abandon); empty for approve and reject.
	Resolution Resolution `json:"resolution,omitempty"`
	// Calls, when set, decides call by call (see VerdictsFor): each call
	// of the approval, named by its CallID or "#<n>", gets approve or
	// reject; Verb is then ignored. Every call must be named. A decision
	// that approves every call is an approve, one that rejects every call
	// a reject; a mixed one claims the approval as an approve that runs
	// the approved calls only (Approval.Verdicts).
	Calls map[string]Verb `json:"calls,omitempty"`
	// Edits, when set, approves after changing arguments: call key (as
	// for Calls) -> the call's new arguments (a JSON object). The engine
	// checks them with its EditChecker (schema, the tool's refusal, blast
	// radius, the policy's risk and approver rule for the new call), and
	// the claim binds the approval to the edited calls' hash in the same
	// atomic step that claims it; PayloadSHA256 is still the hash of what
	// the decider saw (the proposed calls). Verb is then approve. Not
	// with Calls.
	Edits map[string]json.RawMessage `json:"edits,omitempty"`
	// Channel and ChatID are where the decision was taken: the chat of the
	// clicked card or of the typed reply, as the platform reported it. The
	// approver rule "chat" accepts a decision only from the approval's own
	// chat (a card forwarded elsewhere decides nothing there); empty means
	// unknown, which that rule refuses.
	Channel string `json:"channel,omitempty"`
	ChatID  string `json:"chat_id,omitempty"`
	// Grant is the approver's choice for a MEDIUM approval that may grant
	// a window: once, session, or unset (the default: session); or
	// always, for an approval that offers a standing rule
	// (Approval.Standing; on any other the decision is refused as
	// tampered). Ignored by a reject, and by an approval that grants
	// nothing.
	Grant GrantChoice `json:"grant,omitempty"`
}

// Result is what one tool call produced.
type Result struct {
	// Tool and CallID identify the call.
	Tool   string `json:"tool"`
	CallID string `json:"call_id,omitempty"`
	// Status is executed, replayed, failed or frozen for a call that was
	// approved; the approval's status otherwise.
	Status Status `json:"status"`
	// Content is the tool's output or an explanation: a failed call's
	// error, a frozen call's cause alone (in words safe to show). It is
	// never a status sentence (the outcome says that once), so it needs
	// no Detail of its own.
	Content string `json:"content"`
	// IsError reports that Content describes a failure.
	IsError bool `json:"is_error,omitempty"`
	// Edited is the call's Edited: what an approver changed before it
	// ran with the changed arguments.
	Edited string `json:"edited,omitempty"`
}

// Outcome is the result of a decision, or of an approval's end.
type Outcome struct {
	// Status is the outcome status.
	Status Status `json:"status"`
	// Content is the tool's result (for a batch: the results joined) or a
	// status text: the status sentence (OutcomeText) followed by Detail.
	Content string `json:"content"`
	// Detail is what Content says beyond its status sentence, typed so
	// that no reader cuts the sentence off Content: a rejection's decider
	// and comment, a failed or frozen approval's per-call results or
	// cause (in words safe to show, never a tool's own error behind a
	// frozen call), a cancellation's reason, for already_decided how the
	// approval ended ("executed") or "running", for unauthorized who may
	// decide. Content is then "<sentence>: <Detail>" ("<sentence>
	// (<Detail>)" for already_decided and unauthorized). It is built from
	// the same sanitised parts as Content, and empty when the sentence is
	// all, and for executed and replayed, whose Content is the tools'
	// own result.
	Detail string `json:"detail,omitempty"`
	// IsError reports that the outcome is a failure of some kind.
	IsError bool `json:"is_error,omitempty"`
	// Results are the per-call results when tools ran (or were replayed).
	Results []Result `json:"results,omitempty"`
	// DecidedBy is who decided, when someone did.
	DecidedBy UserID `json:"decided_by,omitempty"`
	// Comment is a rejection's reason as the decider wrote it (or the
	// reason given with a per-call decision that declined some calls) (cleaned:
	// redact.Clean, at most MaxNoteRunes runes), so that a reader (the
	// agent telling the model) needs not cut it out of Detail; empty for
	// a rejection without one and for every other outcome.
	Comment string `json:"comment,omitempty"`
	// DecidedVia is where a cancellation came from (Engine.Cancel sets it
	// with DecidedBy, and Store.Cancel records both on the approval);
	// other outcomes leave it empty: the approval's DecidedVia says it.
	DecidedVia Source `json:"decided_via,omitempty"`
	// Approvals and Quorum, on an outcome of status awaiting_quorum (and
	// on the one that reached the quorum), say how many distinct people
	// have approved and how many must; zero where one approval decides.
	Approvals int `json:"approvals,omitempty"`
	Quorum    int `json:"quorum,omitempty"`
	// Resolution is set on the outcome of a frozen approval that a person
	// resolved (Engine.Decide with Verb Resolve): done (Status executed,
	// recorded by hand), abandon (Status failed) or retry (the status of
	// the run it asked for). DecidedBy is then who resolved it, Comment
	// what they wrote. Empty for every other outcome.
	Resolution Resolution `json:"resolution,omitempty"`
}

// Clone returns a deep copy.
func (o Outcome) Clone() Outcome {
	o.Results = append([]Result(nil), o.Results...)
	return o
}
