package approval

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/words"
)

// DescribeIn says in words who may approve, in lang ("zh", "en"; see
// words.In), for a card, a toast or a reply. The user ids are said as
// they are.
func (r ApproverRule) DescribeIn(lang string) string {
	return r.describe(lang, words.ApproversChat)
}

// DescribeElsewhereIn is DescribeIn said outside the chat where the
// approval is decided (the requester's chat of an approval with an
// approvers' chat, approve_in): mode chat is "anyone in the approvers'
// chat".
func (r ApproverRule) DescribeElsewhereIn(lang string) string {
	return r.describe(lang, words.ApproversTheirChat)
}

// describe is DescribeIn with chat as the words of mode chat.
func (r ApproverRule) describe(lang string, chat words.Key) string {
	var s string
	switch r.Mode {
	case ApproverChat:
		s = words.In(lang, chat)
	case ApproverUsers:
		names := make([]string, len(r.Users))
		for i, u := range r.Users {
			names[i] = string(u)
		}
		s = words.In(lang, words.ApproversUsers, strings.Join(names, words.In(lang, words.ApproversSep)))
	default:
		s = words.In(lang, words.ApproversRequester)
	}
	if r.NotRequester && r.Mode != ApproverRequester && r.Mode != "" {
		s += words.In(lang, words.ApproversNotRequester)
	}
	if n := r.Needed(); n > 1 {
		s += words.In(lang, words.ApproversQuorum, n)
	}
	return s
}

// AsideIn is DescribeIn in brackets, to be said after a sentence: " (only
// bob)" in English, "（仅 bob）" in Chinese.
func (r ApproverRule) AsideIn(lang string) string {
	return words.In(lang, words.ApproversAside, r.DescribeIn(lang))
}

// ApproverConfig is the YAML form of an approver rule.
type ApproverConfig struct {
	// Mode is "requester" (default), "chat" or "users".
	Mode ApproverMode `json:"mode" mapstructure:"mode"`
	// Users lists the user ids that may approve when Mode is "users".
	Users []string `json:"users" mapstructure:"users"`
	// Quorum is how many distinct people of the rule must approve (M of
	// N; any one's reject rejects). 0 or 1: one approval decides. Mode
	// requester allows only 1; mode users at most len(users) (one less
	// with high_needs_other when the requester is listed: such a request
	// is refused when it is made).
	Quorum int `json:"quorum" mapstructure:"quorum"`
}

// ToolPolicy overrides the policy for one tool.
type ToolPolicy struct {
	// Risk forces the tool's risk (LOW, MEDIUM, HIGH) instead of the one
	// derived from its effect. Empty keeps the derived risk.
	Risk string `json:"risk" mapstructure:"risk"`
	// Confirm is "always" (every call asks), "never" (no call asks; for
	// trusted read tools) or empty (decide by risk and confidence).
	Confirm string `json:"confirm" mapstructure:"confirm"`
	// ConfidenceThreshold overrides the global threshold for this tool;
	// 0 keeps the global one.
	ConfidenceThreshold float64 `json:"confidence_threshold" mapstructure:"confidence_threshold"`
	// Approvers, when set, is who may approve this tool's calls (with its
	// quorum), whatever their risk: it replaces approvers.<risk>.
	Approvers *ApproverConfig `json:"approvers" mapstructure:"approvers"`
	// ApproveIn, when set, is the approvers' chat of this tool's calls,
	// whatever their risk: it replaces approve_in.<risk>.
	ApproveIn *Place `json:"approve_in" mapstructure:"approve_in"`
	// Escalation, when set, is the timed escalation of this tool's calls,
	// whatever their risk: it replaces escalation.<risk>.
	Escalation []EscalationConfig `json:"escalation" mapstructure:"escalation"`
	// Privacy, when set, is who sees this tool's calls in a group chat,
	// whatever their risk: it replaces privacy.<risk> ("group" or "none").
	Privacy Privacy `json:"privacy" mapstructure:"privacy"`
}

// EscalationConfig is one step of a timed escalation: when nobody has
// decided an approval After its request, it is also shown in To (a new
// card of the same approval: a decision on either settles both), its
// original chat is told, and Approvers may decide it too. The expiry
// still bounds the whole.
type EscalationConfig struct {
	// After is how long after the request the step is taken, if the
	// approval still waits then. Each step's After must be longer than
	// the one before, and shorter than the approval's timeout.
	After time.Duration `json:"after" mapstructure:"after"`
	// To is the chat the approval is also shown in: feishu or dingtalk,
	// and a chat id.
	To Place `json:"to" mapstructure:"to"`
	// Approvers are who may decide it from then on, besides those of the
	// approval's own rule: mode users (the listed user ids) or chat
	// (anyone who decides in To). They count towards its quorum like
	// anyone else, and high_needs_other still keeps the requester out.
	Approvers ApproverConfig `json:"approvers" mapstructure:"approvers"`
}

// validate reports the problems of the escalation steps at path; timeout
// is the longest an approval they serve may wait.
func validateEscalation(path string, steps []EscalationConfig, timeout time.Duration) []error {
	var errs []error
	var prev time.Duration
	for i, st := range steps {
		at := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case st.After <= 0:
			errs = append(errs, fmt.Errorf("%s.after: %v is not positive", at, st.After))
		case st.After <= prev:
			errs = append(errs, fmt.Errorf("%s.after: %v is not later than the step before (%v)", at, st.After, prev))
		case st.After >= timeout:
			errs = append(errs, fmt.Errorf("%s.after: %v is not before the approval expires (timeout %v), so the step would never be taken", at, st.After, timeout))
		}
		prev = max(prev, st.After)
		errs = append(errs, st.To.validate(at+".to")...)
		if st.To.Direct {
			errs = append(errs, fmt.Errorf("%s.to.direct: a step asks in a chat; name its chat_id", at))
		}
		switch st.Approvers.Mode {
		case ApproverUsers, ApproverChat:
			errs = append(errs, st.Approvers.validate(at+".approvers", false)...)
		case "", ApproverRequester:
			errs = append(errs, fmt.Errorf("%s.approvers.mode: write users (with users) or chat: the requester may approve already, so the step would add nobody", at))
		default:
			errs = append(errs, fmt.Errorf("%s.approvers.mode: %q is not users or chat", at, st.Approvers.Mode))
		}
		if st.Approvers.Quorum != 0 {
			errs = append(errs, fmt.Errorf("%s.approvers.quorum: a step has no quorum of its own; the approval's rule keeps its quorum, and the step's people count towards it", at))
		}
	}
	return errs
}

// Place is one chat of one channel: where the cards of the approvals an
// approve_in rule names go (the approvers' chat), instead of the
// requester's chat; or, Direct, the 1:1 chats of the people the approver
// rule lists.
type Place struct {
	// Channel is feishu or dingtalk (the web page and the HTTP API are
	// not supported).
	Channel string `json:"channel" mapstructure:"channel"`
	// ChatID is the chat: a Feishu chat id (oc_…) or a DingTalk
	// conversation id (cid…). Empty when Direct.
	ChatID string `json:"chat_id" mapstructure:"chat_id"`
	// Direct sends the card, with its buttons, to each person the
	// approver rule lists (mode users), in their 1:1 chat with the bot,
	// instead of to a chat (approve_in only). A rule that lists nobody
	// refuses the request when it is made.
	Direct bool `json:"direct,omitempty" mapstructure:"direct"`
}

// ApproveInChannels are the channels an approve_in place may name.
var ApproveInChannels = []string{"feishu", "dingtalk"}

// validate reports the problems of an approve_in place at path.
func (p Place) validate(path string) []error {
	var errs []error
	if !slices.Contains(ApproveInChannels, p.Channel) {
		errs = append(errs, fmt.Errorf("%s.channel: %q is not feishu or dingtalk (chats on the web page or the API cannot be asked here)", path, p.Channel))
	}
	switch {
	case p.Direct && p.ChatID != "":
		errs = append(errs, fmt.Errorf("%s.chat_id: give a chat_id or direct: true, not both", path))
	case !p.Direct && strings.TrimSpace(p.ChatID) == "":
		errs = append(errs, fmt.Errorf("%s.chat_id: is required (or direct: true, to send the card 1:1 to the people the approver rule lists)", path))
	}
	return errs
}

// PolicyConfig is the approval policy: when a tool call must wait for a
// person, who may decide, and for how long.
//
// The decision, in order (the first that applies wins; see Evaluate):
//
//	enabled: false                    runs
//	tools.<name>.confirm: never       runs
//	tools.<name>.confirm: always      asks
//	HIGH                              asks, every time
//	LOW read                          runs, whatever the confidence
//	confidence < threshold            asks (LOW writes and MEDIUM, grant or not)
//	LOW                               runs
//	MEDIUM, strict                    asks, every time
//	MEDIUM, live grant                runs
//	MEDIUM                            asks (the first time)
//
// A call's risk is its effect's (read LOW, write MEDIUM, destructive HIGH),
// or tools.<name>.risk; then its blast radius can raise it to HIGH: a
// write whose dry run affects more than HighRows rows, or what the tool
// says is HIGH (any DDL, UPDATE or DELETE without WHERE).
type PolicyConfig struct {
	// Enabled turns approvals on. When false every tool call runs at once.
	Enabled bool `json:"enabled" mapstructure:"enabled"`
	// Strict makes every call that is not LOW risk ask every time: MEDIUM
	// calls get no grant window. Without it a MEDIUM call asks the first
	// time and an approval grants the window (GrantWindow).
	Strict bool `json:"strict" mapstructure:"strict"`
	// ConfidenceThreshold: a call whose model confidence is below it asks,
	// whatever its risk, except a LOW read, which never asks. Default 0.85.
	ConfidenceThreshold float64 `json:"confidence_threshold" mapstructure:"confidence_threshold"`
	// HighRows: a call whose dry run affects more rows than this is HIGH
	// (the card says "affects 29 rows, more than 20"). 0 turns the row
	// rule off. Default 20.
	HighRows int64 `json:"high_rows" mapstructure:"high_rows"`
	// Tools holds per-tool overrides, keyed by tool name.
	Tools map[string]ToolPolicy `json:"tools" mapstructure:"tools"`
	// GrantWindow: after an approved MEDIUM call, the same session, user,
	// tool and payload run without asking for this long. 0 disables grants.
	// Never applies to HIGH, nor in strict mode. Default 300s.
	GrantWindow time.Duration `json:"grant_window" mapstructure:"grant_window"`
	// Approvers maps a risk (LOW, MEDIUM, HIGH) to who may approve it.
	// Missing risks use the requester rule.
	Approvers map[string]ApproverConfig `json:"approvers" mapstructure:"approvers"`
	// HighNeedsOther requires someone other than the requester to approve
	// a HIGH call (four eyes).
	HighNeedsOther bool `json:"high_needs_other" mapstructure:"high_needs_other"`
	// Timeouts maps a risk to how long an approval waits before it
	// expires. Missing risks use DefaultTimeout (5m); cmd/bot fills them
	// from approval.timeout first.
	Timeouts map[string]time.Duration `json:"timeouts" mapstructure:"timeouts"`
	// ApproveIn maps a risk (LOW, MEDIUM, HIGH) to the approvers' chat:
	// the approval's card (with its buttons) goes there instead of the
	// requester's chat, which gets a status line that follows the
	// approval to its end. The approver rule "chat" then means that chat.
	// Missing risks ask in the requester's chat.
	ApproveIn map[string]Place `json:"approve_in" mapstructure:"approve_in"`
	// Escalation maps a risk (LOW, MEDIUM, HIGH) to its timed escalation:
	// steps taken in order while nobody decides (see EscalationConfig).
	// The replica that sweeps takes each step once. Missing risks never
	// escalate.
	Escalation map[string][]EscalationConfig `json:"escalation" mapstructure:"escalation"`
	// Privacy maps a risk (LOW, MEDIUM, HIGH) to who sees its approvals in
	// a group chat: "group" shows the arguments, preview and result only
	// to the requester and the people who may approve (everyone else
	// sees one redacted line); "none" (or missing) shows them to the
	// chat. A 1:1 chat, and an approver rule "chat", show everything.
	Privacy map[string]Privacy `json:"privacy" mapstructure:"privacy"`
}

// DefaultHighRows is how many rows a write may affect before it is HIGH.
const DefaultHighRows = 20

// DefaultPolicyConfig returns the defaults: enabled, not strict,
// threshold 0.85, HIGH above 20 rows, grants for 300 s, requester
// approves, 5 minute timeouts.
func DefaultPolicyConfig() PolicyConfig {
	return PolicyConfig{
		Enabled:             true,
		ConfidenceThreshold: 0.85,
		HighRows:            DefaultHighRows,
		GrantWindow:         300 * time.Second,
	}
}

// DefaultTimeout is how long an approval waits when the config names no timeout.
const DefaultTimeout = 5 * time.Minute

// Validate reports every problem of the config, each naming its field.
func (c PolicyConfig) Validate() error {
	var errs []error
	if c.ConfidenceThreshold < 0 || c.ConfidenceThreshold > 1 {
		errs = append(errs, fmt.Errorf("confidence_threshold: %v is not between 0 and 1", c.ConfidenceThreshold))
	}
	if c.GrantWindow < 0 {
		errs = append(errs, fmt.Errorf("grant_window: %v is negative", c.GrantWindow))
	}
	if c.HighRows < 0 {
		errs = append(errs, fmt.Errorf("high_rows: %d is negative (0 turns the row rule off)", c.HighRows))
	}
	for name, tp := range c.Tools {
		if tp.Risk != "" {
			if _, err := ParseRisk(tp.Risk); err != nil {
				errs = append(errs, fmt.Errorf("tools.%s.risk: %v", name, err))
			}
		}
		switch tp.Confirm {
		case "", "always", "never":
		default:
			errs = append(errs, fmt.Errorf("tools.%s.confirm: %q is not always, never or empty", name, tp.Confirm))
		}
		if tp.ConfidenceThreshold < 0 || tp.ConfidenceThreshold > 1 {
			errs = append(errs, fmt.Errorf("tools.%s.confidence_threshold: %v is not between 0 and 1", name, tp.ConfidenceThreshold))
		}
		if err := tp.Privacy.validate(); err != nil {
			errs = append(errs, fmt.Errorf("tools.%s.privacy: %w", name, err))
		}
	}
	for _, risk := range slices.Sorted(maps.Keys(c.Privacy)) {
		if _, err := ParseRisk(risk); err != nil {
			errs = append(errs, fmt.Errorf("privacy.%s: %v", risk, err))
			continue
		}
		if err := c.Privacy[risk].validate(); err != nil {
			errs = append(errs, fmt.Errorf("privacy.%s: %w", risk, err))
		}
	}
	for risk, ac := range c.Approvers {
		r, err := ParseRisk(risk)
		if err != nil {
			errs = append(errs, fmt.Errorf("approvers.%s: %v", risk, err))
			continue
		}
		errs = append(errs, ac.validate("approvers."+risk, r == RiskHigh && c.HighNeedsOther)...)
	}
	for name, tp := range c.Tools {
		if tp.Approvers != nil {
			// A tool's rule may serve a HIGH call: high_needs_other applies.
			errs = append(errs, tp.Approvers.validate("tools."+name+".approvers", c.HighNeedsOther)...)
		}
		if tp.ApproveIn != nil {
			errs = append(errs, tp.ApproveIn.validate("tools."+name+".approve_in")...)
			if tp.ApproveIn.Direct && (tp.Approvers == nil || tp.Approvers.Mode != ApproverUsers) {
				errs = append(errs, fmt.Errorf("tools.%s.approve_in.direct: sends the card to the people tools.%s.approvers lists; set it, with mode users", name, name))
			}
		}
	}
	for _, risk := range slices.Sorted(maps.Keys(c.ApproveIn)) {
		p := c.ApproveIn[risk]
		if _, err := ParseRisk(risk); err != nil {
			errs = append(errs, fmt.Errorf("approve_in.%s: %v", risk, err))
			continue
		}
		errs = append(errs, p.validate("approve_in."+risk)...)
		if r, _ := ParseRisk(risk); p.Direct {
			if ac, ok := c.approverConfig(r); !ok || ac.Mode != ApproverUsers {
				errs = append(errs, fmt.Errorf("approve_in.%s.direct: sends the card to the people approvers.%s lists, but it lists nobody (set its mode to users)", risk, risk))
			}
		}
	}
	for _, risk := range slices.Sorted(maps.Keys(c.Escalation)) {
		r, err := ParseRisk(risk)
		if err != nil {
			errs = append(errs, fmt.Errorf("escalation.%s: %v", risk, err))
			continue
		}
		errs = append(errs, validateEscalation("escalation."+risk, c.Escalation[risk], c.timeoutOf(r))...)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
		if steps := c.Tools[name].Escalation; len(steps) > 0 {
			// A tool's call may be of any risk: a step must be reachable
			// under the longest timeout.
			longest := max(c.timeoutOf(RiskLow), c.timeoutOf(RiskMedium), c.timeoutOf(RiskHigh))
			errs = append(errs, validateEscalation("tools."+name+".escalation", steps, longest)...)
		}
	}
	if c.HighNeedsOther {
		if _, ok := c.approverConfig(RiskHigh); !ok {
			errs = append(errs, errors.New("high_needs_other: set approvers.HIGH to chat or users; the default (requester) leaves nobody who may approve"))
		}
	}
	for risk, d := range c.Timeouts {
		if _, err := ParseRisk(risk); err != nil {
			errs = append(errs, fmt.Errorf("timeouts.%s: %v", risk, err))
		}
		if d <= 0 {
			errs = append(errs, fmt.Errorf("timeouts.%s: %v is not positive", risk, d))
		}
	}
	return errors.Join(errs...)
}

// validate reports the problems of an approver rule at path; notReq says
// that the rule may serve a call the requester may not approve
// (high_needs_other).
func (ac ApproverConfig) validate(path string, notReq bool) []error {
	var errs []error
	switch ac.Mode {
	case "", ApproverRequester, ApproverChat:
	case ApproverUsers:
		if len(ac.Users) == 0 {
			errs = append(errs, fmt.Errorf("%s.users: mode users needs at least one user id", path))
		}
		seen := map[string]bool{}
		for _, u := range ac.Users {
			if strings.TrimSpace(u) == "" {
				errs = append(errs, fmt.Errorf("%s.users: an empty user id", path))
			} else if seen[u] {
				errs = append(errs, fmt.Errorf("%s.users: %q is listed twice", path, u))
			}
			seen[u] = true
		}
	default:
		errs = append(errs, fmt.Errorf("%s.mode: %q is not requester, chat or users", path, ac.Mode))
	}
	if notReq && (ac.Mode == "" || ac.Mode == ApproverRequester) {
		errs = append(errs, fmt.Errorf("%s.mode: high_needs_other forbids the requester, so mode requester leaves nobody who may approve", path))
	}
	switch {
	case ac.Quorum < 0:
		errs = append(errs, fmt.Errorf("%s.quorum: %d is negative", path, ac.Quorum))
	case ac.Quorum > 1 && (ac.Mode == "" || ac.Mode == ApproverRequester):
		errs = append(errs, fmt.Errorf("%s.quorum: %d needs that many people, but mode requester has one; use mode users or chat", path, ac.Quorum))
	case ac.Mode == ApproverUsers && ac.Quorum > len(ac.Users):
		errs = append(errs, fmt.Errorf("%s.quorum: %d is more than the %d users listed, so no request could ever be approved", path, ac.Quorum, len(ac.Users)))
	}
	return errs
}

func (c PolicyConfig) approverConfig(r Risk) (ApproverConfig, bool) {
	for k, v := range c.Approvers {
		if strings.EqualFold(k, r.String()) {
			return v, true
		}
	}
	return ApproverConfig{}, false
}

// Policy evaluates tool calls against a PolicyConfig. It is immutable; a
// config reload builds a new Policy.
type Policy struct {
	cfg PolicyConfig
}

// NewPolicy validates cfg and returns a Policy for it.
func NewPolicy(cfg PolicyConfig) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Policy{cfg: cfg}, nil
}

// Config returns the policy's configuration.
func (p *Policy) Config() PolicyConfig { return p.cfg }

// Words is one sentence a person reads, said in English and in Chinese:
// a risk reason, which the record keeps in both because each card of an
// approval is shown in its own channel's language. Build it with Say from
// the catalogue of package words.
type Words struct {
	EN string `json:"en,omitempty"`
	ZH string `json:"zh,omitempty"`
}

// In returns the sentence in lang ("zh", "zh-CN" …, else English).
func (w Words) In(lang string) string {
	if words.Of(lang) == words.ZH && w.ZH != "" {
		return w.ZH
	}
	return w.EN
}

// Say is the catalogue's sentence k (package words) in English and
// Chinese, with args formatted into both.
func Say(k words.Key, args ...any) Words {
	return sayIn(func(l words.Lang) string { return words.Text(l, k, args...) })
}

// sayIn is the sentence that say writes in each language.
func sayIn(say func(words.Lang) string) Words {
	return Words{EN: say(words.EN), ZH: say(words.ZH)}
}

// joinWords is a, then b, with each language's separator.
func joinWords(a, b Words) Words {
	return Words{EN: a.EN + words.Text(words.EN, words.ReasonSep) + b.EN, ZH: a.ZH + words.Text(words.ZH, words.ReasonSep) + b.ZH}
}

// IsZero reports that there is no sentence.
func (w Words) IsZero() bool { return w.EN == "" && w.ZH == "" }

// Blast is a call's blast radius as its tool measured it before the
// policy decides (a dry run that is rolled back): facts that can raise the
// call to HIGH. The zero Blast says nothing.
type Blast struct {
	// Rows is how many rows the call changes; it counts only when Measured.
	Rows int64
	// Measured reports that Rows was measured: by a dry run, or (AtMost)
	// by counting the rows the call may touch.
	Measured bool
	// AtMost reports that Rows is an upper bound, not what a dry run did.
	AtMost bool
	// High, when set, makes the call HIGH whatever its effect and says why:
	// a DDL, an UPDATE or DELETE without WHERE, a dry run that timed out.
	High Words
}

// CallInfo is what the policy needs to know about one tool call.
type CallInfo struct {
	Session SessionKey
	User    UserID
	Tool    string
	Effect  Effect
	Hash    string // PayloadHash of the call
	// Confidence is the model's confidence in the call, 0..1. Models that
	// give none (LLMs) report 1.
	Confidence float64
	// Blast is what the tool measured of the call before asking, if anything.
	Blast Blast
	// EffectSource says where Effect came from when that is not the tool's
	// own code (an MCP tool: a trusted server's annotation, or an untrusted
	// server); the reason ends with it, unless tools.<name>.risk overrides.
	EffectSource Words
}

// Verdict is the policy's answer for one call.
type Verdict struct {
	// NeedsApproval reports that the call must wait for a person.
	NeedsApproval bool
	// Risk is the call's risk after overrides and its blast radius.
	Risk Risk
	// Reason says why, in a sentence a card can show (English); ReasonZH
	// says the same in Chinese.
	Reason   string
	ReasonZH string
	// Approvers is who may decide.
	Approvers ApproverRule
	// ApproveIn, when set, is the approvers' chat: the card goes there
	// (approve_in), and the requester's chat gets a status line.
	ApproveIn *Place
	// Escalation is the approval's timed escalation, in order; empty: it
	// never escalates.
	Escalation []Escalation
	// Timeout is how long the approval waits.
	Timeout time.Duration
	// Privacy is who sees the call's approval in a group chat
	// (privacy.<risk>, tools.<name>.privacy); see Approval.Private.
	Privacy Privacy
	// Grantable reports that an approval of this call may grant the
	// session a window without asking (MEDIUM only, not strict), and
	// GrantWindow how long.
	Grantable   bool
	GrantWindow time.Duration
	// Grant, when a live grant let the call run without asking (rule 9),
	// is that grant: who approved the same request, and when. Set by
	// Engine.Evaluate; the agent says so in the chat.
	Grant *Grant
}

// GrantKey is the store key of a session grant for one exact call.
func GrantKey(c CallInfo) string {
	return string(c.Session) + "\x00" + string(c.User) + "\x00" + c.Tool + "\x00" + c.Hash
}

// effectWords are the catalogue's names of the effects, for a reason.
var effectWords = map[Effect]words.Key{EffectRead: words.EffectRead, EffectWrite: words.EffectWrite, EffectDestructive: words.EffectDestructive}

// Evaluate decides whether c needs approval; the table is in the
// documentation of PolicyConfig. hasGrant reports whether the session
// holds a live grant for the call; it is consulted only for a MEDIUM call
// that would otherwise ask, and may be nil.
func (p *Policy) Evaluate(c CallInfo, hasGrant func() (bool, error)) (Verdict, error) {
	tp := p.cfg.Tools[c.Tool]
	risk := c.Effect.Risk()
	if tp.Risk != "" {
		r, err := ParseRisk(tp.Risk)
		if err != nil {
			return Verdict{}, err
		}
		risk = r
	}
	// The blast radius raises the risk (never lowers it).
	var blast []Words
	if !c.Blast.High.IsZero() {
		blast = append(blast, c.Blast.High)
	}
	if b := c.Blast; b.Measured && p.cfg.HighRows > 0 && b.Rows > p.cfg.HighRows {
		k := words.ReasonRows
		if b.AtMost {
			k = words.ReasonRowsAtMost
		}
		blast = append(blast, Say(k, b.Rows, p.cfg.HighRows))
	}
	if len(blast) > 0 {
		risk = RiskHigh
	}
	v := Verdict{Risk: risk, Approvers: p.approvers(risk, tp.Approvers), ApproveIn: p.approveIn(risk, tp.ApproveIn), Timeout: p.timeout(risk),
		Privacy: p.privacy(risk, tp.Privacy)}
	v.Escalation = p.escalation(risk, tp.Escalation)
	if risk == RiskMedium && p.cfg.GrantWindow > 0 && !p.cfg.Strict {
		v.Grantable, v.GrantWindow = true, p.cfg.GrantWindow
	}
	threshold := p.cfg.ConfidenceThreshold
	if tp.ConfidenceThreshold > 0 {
		threshold = tp.ConfidenceThreshold
	}
	say := func(ask bool, w Words) (Verdict, error) {
		if tp.Risk == "" && !c.EffectSource.IsZero() {
			w = joinWords(w, c.EffectSource)
		}
		v.NeedsApproval, v.Reason, v.ReasonZH = ask, w.EN, w.ZH
		return v, nil
	}
	switch {
	case !p.cfg.Enabled:
		return say(false, Say(words.ReasonOff))
	case tp.Confirm == "never":
		return say(false, Say(words.ReasonNever))
	case tp.Confirm == "always":
		return say(true, Say(words.ReasonAlways))
	case risk == RiskHigh && len(blast) > 0:
		w := blast[0]
		for _, b := range blast[1:] {
			w = joinWords(w, b)
		}
		return say(true, w)
	case risk == RiskHigh:
		return say(true, sayIn(func(l words.Lang) string { return words.Text(l, words.ReasonHigh, effectName(l, c.Effect)) }))
	case risk == RiskLow && c.Effect == EffectRead:
		return say(false, Say(words.ReasonLowRead))
	case c.Confidence < threshold:
		return say(true, Say(words.ReasonLowConfidence, c.Confidence, threshold))
	case risk == RiskLow:
		return say(false, Say(words.ReasonLow))
	case p.cfg.Strict:
		return say(true, Say(words.ReasonStrict))
	}
	if v.Grantable && hasGrant != nil {
		ok, err := hasGrant()
		if err != nil {
			return Verdict{}, err
		}
		if ok {
			return say(false, Say(words.ReasonGranted))
		}
	}
	if v.Grantable {
		return say(true, Say(words.ReasonGrantable, shortDuration(v.GrantWindow)))
	}
	return say(true, Say(words.ReasonMedium))
}

// ShortDuration writes d without trailing zero units: 5m, not 5m0s.
func ShortDuration(d time.Duration) string { return shortDuration(d) }

// shortDuration writes d without trailing zero units: 5m, not 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// zhEffect names an effect in Chinese, or as it is.
// effectName names e in l; an effect the catalogue does not know is
// named as it is spelt.
func effectName(l words.Lang, e Effect) string {
	if k, ok := effectWords[e]; ok {
		return words.Text(l, k)
	}
	return string(e)
}

// approvers is the rule for a call of risk r: the tool's own (tool, when
// set), else approvers.<r>.
func (p *Policy) approvers(r Risk, tool *ApproverConfig) ApproverRule {
	ac, _ := p.cfg.approverConfig(r)
	if tool != nil {
		ac = *tool
	}
	rule := ApproverRule{Mode: ac.Mode, Quorum: ac.Quorum}
	if rule.Quorum == 1 {
		rule.Quorum = 0
	}
	if rule.Mode == "" {
		rule.Mode = ApproverRequester
	}
	for _, u := range ac.Users {
		rule.Users = append(rule.Users, UserID(u))
	}
	rule.NotRequester = r == RiskHigh && p.cfg.HighNeedsOther
	return rule
}

// escalation is the timed escalation of a call of risk r: the tool's own
// steps (tool, when set), else escalation.<r>. (The approval's own
// rule's NotRequester, high_needs_other, keeps the requester out of every
// step too.)
func (p *Policy) escalation(r Risk, tool []EscalationConfig) []Escalation {
	steps := tool
	if len(steps) == 0 {
		for k, s := range p.cfg.Escalation {
			if strings.EqualFold(k, r.String()) {
				steps = s
			}
		}
	}
	var out []Escalation
	for _, st := range steps {
		rule := ApproverRule{Mode: st.Approvers.Mode}
		for _, u := range st.Approvers.Users {
			rule.Users = append(rule.Users, UserID(u))
		}
		out = append(out, Escalation{After: st.After, To: st.To, Approvers: rule})
	}
	return out
}

// approveIn is the approvers' chat of a call of risk r: the tool's own
// (tool, when set), else approve_in.<r>, else nil (the requester's chat).
func (p *Policy) approveIn(r Risk, tool *Place) *Place {
	if tool != nil {
		pl := *tool
		return &pl
	}
	for k, pl := range p.cfg.ApproveIn {
		if strings.EqualFold(k, r.String()) {
			return &pl
		}
	}
	return nil
}

func (p *Policy) timeout(r Risk) time.Duration { return p.cfg.timeoutOf(r) }

// timeoutOf is how long an approval of risk r waits: timeouts.<r>, else
// DefaultTimeout.
func (c PolicyConfig) timeoutOf(r Risk) time.Duration {
	for k, d := range c.Timeouts {
		if strings.EqualFold(k, r.String()) && d > 0 {
			return d
		}
	}
	return DefaultTimeout
}
