package approval

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ApproverMode says who may decide an approval.
type ApproverMode string

// Approver modes.
const (
	ApproverRequester ApproverMode = "requester" // only the person who asked (default)
	ApproverChat      ApproverMode = "chat"      // anyone who decides from within the approval's chat
	ApproverUsers     ApproverMode = "users"     // only the listed user ids
)

// ApproverRule is who may decide one approval; it is copied into the record
// so that a config reload does not change the rule of a pending approval.
type ApproverRule struct {
	// Mode is requester, chat or users.
	Mode ApproverMode `json:"mode"`
	// Users are the allowed actors when Mode is users.
	Users []UserID `json:"users,omitempty"`
	// NotRequester forbids the requester from approving (four eyes); the
	// requester may still reject their own request.
	NotRequester bool `json:"not_requester,omitempty"`
}

// Allows reports whether actor may take verb on an approval requested by
// requester. inChat reports that the decision was taken in the approval's
// own chat (the platform said so: the clicked card's or the typed reply's
// chat is the approval's); the rule "chat" needs it from everyone but the
// requester, who is in the chat by definition (a DingTalk 1:1 card, for
// one, reports no conversation id on a click).
func (r ApproverRule) Allows(actor, requester UserID, verb Verb, inChat bool) bool {
	if actor == "" {
		return false
	}
	if verb == Reject && actor == requester {
		return true // anyone may withdraw their own request
	}
	if r.NotRequester && actor == requester {
		return false
	}
	switch r.Mode {
	case ApproverChat:
		return inChat || actor == requester
	case ApproverUsers:
		return slices.Contains(r.Users, actor)
	default:
		return actor == requester
	}
}

// Describe says in words who may approve, for a toast or a reply.
func (r ApproverRule) Describe() string {
	var s string
	switch r.Mode {
	case ApproverChat:
		s = "anyone in this chat"
	case ApproverUsers:
		names := make([]string, len(r.Users))
		for i, u := range r.Users {
			names[i] = string(u)
		}
		s = "only " + strings.Join(names, ", ")
	default:
		s = "only the person who asked"
	}
	if r.NotRequester && r.Mode != ApproverRequester && r.Mode != "" {
		s += " (not the person who asked)"
	}
	return s
}

// ApproverConfig is the YAML form of an approver rule.
type ApproverConfig struct {
	// Mode is "requester" (default), "chat" or "users".
	Mode ApproverMode `json:"mode" mapstructure:"mode"`
	// Users lists the user ids that may approve when Mode is "users".
	Users []string `json:"users" mapstructure:"users"`
}

// ToolPolicy overrides the policy for one tool.
type ToolPolicy struct {
	// Risk forces the tool's risk (LOW, MEDIUM, HIGH) instead of the one
	// derived from its kind. Empty keeps the derived risk.
	Risk string `json:"risk" mapstructure:"risk"`
	// Confirm is "always" (every call asks), "never" (no call asks; for
	// trusted read tools) or empty (decide by risk and confidence).
	Confirm string `json:"confirm" mapstructure:"confirm"`
	// ConfidenceThreshold overrides the global threshold for this tool;
	// 0 keeps the global one.
	ConfidenceThreshold float64 `json:"confidence_threshold" mapstructure:"confidence_threshold"`
}

// PolicyConfig is the approval policy: when a tool call must wait for a
// person, who may decide, and for how long.
type PolicyConfig struct {
	// Enabled turns approvals on. When false every tool call runs at once.
	Enabled bool `json:"enabled" mapstructure:"enabled"`
	// Strict makes every call that is not LOW risk ask, even when the model
	// is confident.
	Strict bool `json:"strict" mapstructure:"strict"`
	// ConfidenceThreshold: a call whose model confidence is below it asks,
	// whatever its risk. Default 0.85.
	ConfidenceThreshold float64 `json:"confidence_threshold" mapstructure:"confidence_threshold"`
	// Tools holds per-tool overrides, keyed by tool name.
	Tools map[string]ToolPolicy `json:"tools" mapstructure:"tools"`
	// GrantWindow: after an approved MEDIUM call, the same session, user,
	// tool and payload run without asking for this long. 0 disables grants.
	// Never applies to HIGH. Default 300s.
	GrantWindow time.Duration `json:"grant_window" mapstructure:"grant_window"`
	// Approvers maps a risk (LOW, MEDIUM, HIGH) to who may approve it.
	// Missing risks use the requester rule.
	Approvers map[string]ApproverConfig `json:"approvers" mapstructure:"approvers"`
	// HighNeedsOther requires someone other than the requester to approve
	// a HIGH call (four eyes).
	HighNeedsOther bool `json:"high_needs_other" mapstructure:"high_needs_other"`
	// Timeouts maps a risk to how long an approval waits before it
	// expires. Missing risks use 5m.
	Timeouts map[string]time.Duration `json:"timeouts" mapstructure:"timeouts"`
}

// DefaultPolicyConfig returns the defaults: enabled, not strict,
// threshold 0.85, grants for 300 s, requester approves, 5 minute timeouts.
func DefaultPolicyConfig() PolicyConfig {
	return PolicyConfig{
		Enabled:             true,
		ConfidenceThreshold: 0.85,
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
	}
	for risk, ac := range c.Approvers {
		r, err := ParseRisk(risk)
		if err != nil {
			errs = append(errs, fmt.Errorf("approvers.%s: %v", risk, err))
			continue
		}
		switch ac.Mode {
		case "", ApproverRequester, ApproverChat:
		case ApproverUsers:
			if len(ac.Users) == 0 {
				errs = append(errs, fmt.Errorf("approvers.%s.users: mode users needs at least one user id", risk))
			}
		default:
			errs = append(errs, fmt.Errorf("approvers.%s.mode: %q is not requester, chat or users", risk, ac.Mode))
		}
		if r == RiskHigh && c.HighNeedsOther && (ac.Mode == "" || ac.Mode == ApproverRequester) {
			errs = append(errs, fmt.Errorf("approvers.HIGH.mode: high_needs_other forbids the requester, so mode requester leaves nobody who may approve"))
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

// CallInfo is what the policy needs to know about one tool call.
type CallInfo struct {
	Session SessionKey
	User    UserID
	Tool    string
	Kind    Kind
	Hash    string // PayloadHash of the call
	// Confidence is the model's confidence in the call, 0..1. Models that
	// give none (LLMs) report 1.
	Confidence float64
}

// Verdict is the policy's answer for one call.
type Verdict struct {
	// NeedsApproval reports that the call must wait for a person.
	NeedsApproval bool
	// Risk is the call's risk after overrides.
	Risk Risk
	// Reason says why, in a sentence a card can show.
	Reason string
	// Approvers is who may decide.
	Approvers ApproverRule
	// Timeout is how long the approval waits.
	Timeout time.Duration
	// Grantable reports that an approval of this call may grant the
	// session a window without asking (MEDIUM only), and GrantWindow how long.
	Grantable   bool
	GrantWindow time.Duration
}

// GrantKey is the store key of a session grant for one exact call.
func GrantKey(c CallInfo) string {
	return string(c.Session) + "\x00" + string(c.User) + "\x00" + c.Tool + "\x00" + c.Hash
}

// Evaluate decides whether c needs approval. hasGrant reports whether the
// session holds a live grant for the call; it is consulted only for MEDIUM
// calls and may be nil.
func (p *Policy) Evaluate(c CallInfo, hasGrant func() (bool, error)) (Verdict, error) {
	tp := p.cfg.Tools[c.Tool]
	risk := c.Kind.Risk()
	if tp.Risk != "" {
		r, err := ParseRisk(tp.Risk)
		if err != nil {
			return Verdict{}, err
		}
		risk = r
	}
	v := Verdict{Risk: risk, Approvers: p.approvers(risk), Timeout: p.timeout(risk)}
	if risk == RiskMedium && p.cfg.GrantWindow > 0 {
		v.Grantable, v.GrantWindow = true, p.cfg.GrantWindow
	}
	threshold := p.cfg.ConfidenceThreshold
	if tp.ConfidenceThreshold > 0 {
		threshold = tp.ConfidenceThreshold
	}
	switch {
	case !p.cfg.Enabled:
		v.Reason = "approvals are turned off"
	case tp.Confirm == "never":
		v.Reason = "configured to run without confirmation"
	case tp.Confirm == "always":
		v.NeedsApproval, v.Reason = true, "configured to always ask"
	case risk == RiskHigh:
		v.NeedsApproval, v.Reason = true, fmt.Sprintf("%s risk (%s)", risk, c.Kind)
	default:
		if risk == RiskMedium && v.Grantable && hasGrant != nil {
			ok, err := hasGrant()
			if err != nil {
				return Verdict{}, err
			}
			if ok {
				v.Reason = "approved earlier in this session"
				return v, nil
			}
		}
		switch {
		case c.Confidence < threshold:
			v.NeedsApproval = true
			v.Reason = fmt.Sprintf("low confidence (%.2f < %.2f)", c.Confidence, threshold)
		case risk == RiskMedium && p.cfg.Strict:
			v.NeedsApproval, v.Reason = true, "MEDIUM risk (strict mode)"
		case risk == RiskMedium:
			v.Reason = "confident and not destructive"
		default:
			v.Reason = "LOW risk"
		}
	}
	return v, nil
}

func (p *Policy) approvers(r Risk) ApproverRule {
	ac, _ := p.cfg.approverConfig(r)
	rule := ApproverRule{Mode: ac.Mode}
	if rule.Mode == "" {
		rule.Mode = ApproverRequester
	}
	for _, u := range ac.Users {
		rule.Users = append(rule.Users, UserID(u))
	}
	rule.NotRequester = r == RiskHigh && p.cfg.HighNeedsOther
	return rule
}

func (p *Policy) timeout(r Risk) time.Duration {
	for k, d := range p.cfg.Timeouts {
		if strings.EqualFold(k, r.String()) && d > 0 {
			return d
		}
	}
	return DefaultTimeout
}
