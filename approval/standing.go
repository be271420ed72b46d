package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// GrantAlways is the third approve choice of an approval that offers a
// standing rule (Approval.Standing): run it, and from then on allow the
// agent's calls the rule matches without a card, until the rule is
// revoked or its window ends. Chosen on an approval that offers none, the
// decision is refused as tampered and nothing is claimed.
const GrantAlways GrantChoice = "always"

// PermissionRule is one rule of Claude Code's permission vocabulary as its
// PermissionRequest hook suggests it (permission_suggestions, type
// addRules): a tool name and, optionally, the rule's content
// ("npm test:*"), written Bash(npm test:*).
type PermissionRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// String writes the rule as Claude Code's settings do: Tool or
// Tool(content).
func (r PermissionRule) String() string {
	if r.RuleContent == "" {
		return r.ToolName
	}
	return r.ToolName + "(" + r.RuleContent + ")"
}

// Standing is a standing rule for another agent (package gate), as an
// approval offers it and, once an approver chose it (GrantAlways), as the
// grant it becomes (Grant.Rules).
type Standing struct {
	// Session is where the rule is kept once allowed: RulesSession of
	// the approvers' chat, so /grants and /revoke there list and end it.
	Session SessionKey `json:"session"`
	// Agent is the agent the rule allows (gate's agent name).
	Agent string `json:"agent"`
	// Rules are the rules, as the agent suggested them.
	Rules []PermissionRule `json:"rules"`
	// Window is how long the rule stands once allowed.
	Window time.Duration `json:"window"`
	// Suggestion is the agent's own suggestion (one JSON object of
	// Claude Code's permission_suggestions), answered back to it as
	// updatedPermissions when an approver chose the rule.
	Suggestion json.RawMessage `json:"suggestion,omitempty"`
}

// MaxStandingRules and MaxStandingRule bound a standing rule: its number
// of rules, and the length of one rule written out.
const (
	MaxStandingRules = 8
	MaxStandingRule  = 300
	maxSuggestion    = 4096
)

// Valid reports why s cannot be a standing rule, or nil.
func (s Standing) Valid() error {
	switch {
	case s.Session == "" || s.Agent == "":
		return errors.New("a standing rule needs a session and an agent")
	case len(s.Rules) == 0 || len(s.Rules) > MaxStandingRules:
		return fmt.Errorf("a standing rule holds 1 to %d rules", MaxStandingRules)
	case s.Window <= 0:
		return errors.New("a standing rule needs a positive window")
	case len(s.Suggestion) > maxSuggestion:
		return fmt.Errorf("a standing rule's suggestion is longer than %d bytes", maxSuggestion)
	}
	for _, r := range s.Rules {
		if r.ToolName == "" || len(r.String()) > MaxStandingRule || strings.ContainsAny(r.String(), "\x00\n\r") {
			return fmt.Errorf("rule %q: a tool name and at most %d characters on one line", r.String(), MaxStandingRule)
		}
	}
	return nil
}

// Clone returns a deep copy of s.
func (s Standing) Clone() Standing {
	s.Rules = append([]PermissionRule(nil), s.Rules...)
	s.Suggestion = append(json.RawMessage(nil), s.Suggestion...)
	return s
}

// Words writes the rules as Claude Code's settings do, joined by ", ":
// "Bash(npm test:*)".
func (s Standing) Words() string {
	out := make([]string, len(s.Rules))
	for i, r := range s.Rules {
		out[i] = r.String()
	}
	return strings.Join(out, ", ")
}

// Hash names the rule set of s for its grant's key (GrantKey's hash): the
// SHA-256 of the agent and its rules.
func (s Standing) Hash() string {
	h := sha256.New()
	h.Write([]byte("hitlbot standing rule\x00" + s.Agent))
	for _, r := range s.Rules {
		h.Write([]byte("\x00" + r.ToolName + "\x00" + r.RuleContent))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// rulesMark ends the session of a chat's standing rules (RulesSession).
const rulesMark = "#rules"

// RulesSession is the session whose grants are the standing rules allowed
// in a chat (channel and chat id): the approvers' chat of the agents
// whose cards offered them. /grants and /revoke in that chat read it
// beside the chat's own session, whatever the session scope.
func RulesSession(channel, chatID string) SessionKey {
	return SessionKey(channel + ":" + chatID + rulesMark)
}

// StandingRule reports whether g is a standing rule (GrantAlways), not a
// session grant.
func (g Grant) StandingRule() bool { return len(g.Rules) > 0 }

// checkAlways refuses a decision choosing GrantAlways on an approval that
// offers no standing rule (a forged or stale click value): audited as
// tampered, nothing claimed. The record's Standing never changes after
// Put, so reading it before the claim is enough. It returns the outcome
// to answer, or nil when the decision may go on.
func (e *Engine) checkAlways(ctx context.Context, id ID, d Decision) (*Outcome, error) {
	if d.Grant != GrantAlways || d.Verb != Approve {
		return nil, nil
	}
	a, err := e.cfg.Store.Get(ctx, id)
	if KindOf(err) == errkind.NotFound {
		o := e.outcome(StatusMissing, "")
		return &o, nil
	}
	if err != nil {
		return nil, err
	}
	if a.Standing != nil && d.Edits == nil && d.Calls == nil {
		return nil, nil
	}
	e.audit(a, audit.EventTampered, d.Actor, d.Source, StatusTampered, "the always choice on an approval that offers no standing rule")
	e.log.Warn("a decision chose a standing rule the approval does not offer; refused", "approval_id", id, "user_id", d.Actor)
	o := e.outcome(StatusTampered, "")
	return &o, nil
}

// stand records the standing rule of an executed approval whose approver
// chose it (GrantAlways): a grant of the rule's session, for its window,
// remembering who allowed it and when, and audits it (standing_rule: who,
// when, which rule). A rule that cannot be recorded is logged: the agent's
// next call will ask again, which is safe.
func (e *Engine) stand(ctx context.Context, a *Approval) {
	st := a.Standing
	if st == nil {
		return
	}
	now := e.cfg.Clock.Now().UTC()
	at := a.DecidedAt
	if at.IsZero() {
		at = now
	}
	g := Grant{
		Session:       st.Session,
		User:          a.Requester,
		Tool:          st.Agent + "/" + st.Rules[0].ToolName,
		PayloadSHA256: st.Hash(),
		Summary:       st.Words(),
		ApprovalID:    a.ID,
		ApprovedBy:    a.DecidedBy,
		ApprovedAt:    at,
		ExpiresAt:     now.Add(st.Window),
		Agent:         st.Agent,
		Rules:         append([]PermissionRule(nil), st.Rules...),
	}
	if err := e.cfg.Store.PutGrant(ctx, g, st.Window); err != nil {
		e.log.Warn("recording a standing rule failed", "approval_id", a.ID, "tool", g.Tool, "err", err)
		return
	}
	e.cfg.Audit.Append(audit.Record{
		Time:          now,
		Event:         audit.EventStandingRule,
		ApprovalID:    string(a.ID),
		Session:       string(st.Session),
		Tool:          g.Tool,
		PayloadSHA256: g.PayloadSHA256,
		Actor:         string(a.DecidedBy),
		Source:        string(a.DecidedVia),
		Reason:        "always allow " + g.Summary + " for " + st.Agent + " until " + g.ExpiresAt.Format(time.RFC3339),
	})
}
