package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/internal/clip"
)

// Standing rules ("always allow Bash(npm test:*) for this agent").
//
// Claude Code's PermissionRequest hook input carries permission_suggestions:
// what its own dialog would offer to remember. An addRules suggestion with
// behavior allow, whose rules this file can match exactly as Claude Code
// does (matchRule), becomes a third approve choice on the card
// (approval.Approval.Standing). An approver who chooses it allows the call,
// and the engine records the rules as a grant of the approvers' chat's rules
// session (approval.RulesSession): /grants lists it there, /revoke ends it.
// The hook's answer then carries the suggestion as updatedPermissions
// (Claude Code writes it to its local settings); Codex, which refuses
// updatedPermissions, gets a bare allow. From then on a call of the same
// agent that a rule matches is allowed without a card (audited auto_allow,
// naming the rule and who allowed it), on every replica, until the rule is
// revoked or its window (the agent's rule_window) ends. A HIGH call always
// asks: no rule is offered for it, and none allows it.

// DefaultRuleWindow is AgentConfig.RuleWindow's default.
const DefaultRuleWindow = 30 * 24 * time.Hour

// ruleWindow is how long a standing rule of ag stands.
func (a *Agent) ruleWindow() time.Duration {
	if a.cfg.RuleWindow > 0 {
		return a.cfg.RuleWindow
	}
	return DefaultRuleWindow
}

// suggestion is one entry of permission_suggestions, as far as hitlbot
// reads it.
type suggestion struct {
	Type        string                    `json:"type"`
	Rules       []approval.PermissionRule `json:"rules"`
	Behavior    string                    `json:"behavior"`
	Destination string                    `json:"destination"`
}

// offer returns the standing rule a hook request's permission_suggestions
// let the card offer: the first addRules suggestion with behavior allow
// whose every rule matchRule can match (at most approval.MaxStandingRules
// of them), with that suggestion as Claude Code sent it. ok is false when
// there is none (absent, not a list, other types, rules hitlbot cannot
// match as Claude Code does): then the card offers no always choice.
func offer(raw json.RawMessage) (rules []approval.PermissionRule, sugg json.RawMessage, ok bool) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, nil, false
	}
	for _, item := range list {
		var s suggestion
		if json.Unmarshal(item, &s) != nil || s.Type != "addRules" || s.Behavior != "allow" ||
			len(s.Rules) == 0 || len(s.Rules) > approval.MaxStandingRules {
			continue
		}
		fit := true
		for _, r := range s.Rules {
			if !matchable(r) {
				fit = false
				break
			}
		}
		if !fit {
			continue
		}
		var compact bytes.Buffer
		if json.Compact(&compact, item) != nil {
			continue
		}
		return s.Rules, compact.Bytes(), true
	}
	return nil, nil, false
}

// matchable reports whether matchRule matches r as Claude Code does: a
// tool name alone (every call of the tool), or a Bash rule whose content
// is an exact command or a prefix rule with one trailing wildcard
// ("npm test:*", "make build *", "git push*"). Rules of other tools with a
// content (Read(//path/**), WebFetch(domain:…)) and wildcards elsewhere
// are not offered.
func matchable(r approval.PermissionRule) bool {
	if r.ToolName == "" || strings.ContainsAny(r.ToolName, "()/\x00\n") || len(r.String()) > approval.MaxStandingRule ||
		strings.ContainsAny(r.RuleContent, "\x00\n\r") {
		return false
	}
	if r.RuleContent == "" {
		return true
	}
	if r.ToolName != "Bash" {
		return false
	}
	body := strings.TrimSuffix(r.RuleContent, "*")
	return strings.TrimSpace(body) != "" && !strings.Contains(body, "*")
}

// shellOperators are what makes a command more than one command (or
// redirects it): a prefix rule never matches a command holding one, as
// Claude Code does not let Bash(safe:*) allow "safe && other".
const shellOperators = ";&|<>`$\n\r()"

// matchRule reports whether rule r allows a call of tool with input (a
// JSON object), as Claude Code matches its permission rules:
//   - "Tool" (no content): every call of Tool;
//   - Bash "cmd" (no wildcard): the command exactly;
//   - Bash "prefix:*" (the legacy form): the command prefix, or prefix
//     followed by a space and more;
//   - Bash "prefix *": the command prefix, or prefix followed by a space
//     and more (Claude Code 2.1.328 suggests "make build *" for `make
//     build`, and its rule then allows `make build` itself);
//   - Bash "prefix*": any command starting with prefix;
//
// and a wildcard rule never matches a command holding a shell operator
// (shellOperators). Anything else does not match.
func matchRule(r approval.PermissionRule, tool string, input json.RawMessage) bool {
	if !matchable(r) || r.ToolName != tool {
		return false
	}
	if r.RuleContent == "" {
		return true
	}
	var in struct {
		Command *string `json:"command"`
	}
	if json.Unmarshal(input, &in) != nil || in.Command == nil {
		return false
	}
	cmd, c := *in.Command, r.RuleContent
	if !strings.HasSuffix(c, "*") {
		return cmd == c
	}
	if strings.ContainsAny(cmd, shellOperators) {
		return false
	}
	switch {
	case strings.HasSuffix(c, ":*"):
		p := strings.TrimSuffix(c, ":*")
		return cmd == p || strings.HasPrefix(cmd, p+" ")
	case strings.HasSuffix(c, " *"):
		return cmd == strings.TrimSuffix(c, " *") || strings.HasPrefix(cmd, strings.TrimSuffix(c, "*"))
	}
	return strings.HasPrefix(cmd, strings.TrimSuffix(c, "*"))
}

// standingFor returns ag's live standing rule that allows a call of tool
// with input (canonical), from the store every replica reads; nil when
// none does.
func (g *Gate) standingFor(ctx context.Context, ag *Agent, tool string, input json.RawMessage) (*approval.Grant, error) {
	channel, chat := g.place(ag)
	gs, err := g.deps.Engine.Store().Grants(ctx, approval.RulesSession(channel, chat))
	if err != nil {
		return nil, err
	}
	for i := range gs {
		gr := &gs[i]
		if !gr.StandingRule() || gr.Agent != ag.cfg.Name {
			continue
		}
		for _, r := range gr.Rules {
			if matchRule(r, tool, input) {
				return gr, nil
			}
		}
	}
	return nil, nil
}

// allowStanding answers a call a standing rule allows: audited auto_allow
// (the approval that allowed the rule, the rule, who allowed it and
// when), and allowed only once the trail holds the record.
func (g *Gate) allowStanding(ctx context.Context, ag *Agent, gr *approval.Grant, session approval.SessionKey, name, hash string, canon json.RawMessage, risk approval.Risk) (Answer, error) {
	why := "the standing rule " + gr.Summary + " for " + ag.cfg.Name + ", allowed by " + string(gr.ApprovedBy) + " at " + gr.ApprovedAt.UTC().Format(time.RFC3339)
	if err := g.auditAllowed(ctx, audit.Record{Event: audit.EventAutoAllow, ApprovalID: string(gr.ApprovalID), Session: string(session), Tool: name,
		PayloadSHA256: hash, Actor: ag.cfg.Name, Source: "agent", Outcome: StatusAllowed, Reason: clip.Runes(why, 400)}); err != nil {
		g.log.Error("agent request allowed by a standing rule, but its audit record was not taken; answered unavailable", "agent", ag.cfg.Name, "tool", name, "err", err)
		return Answer{}, err
	}
	g.log.Info("agent request allowed by a standing rule", "agent", ag.cfg.Name, "tool", name, "approval_id", gr.ApprovalID)
	return Answer{Status: StatusAllowed, Input: canon, Risk: risk.String(), DecidedBy: gr.ApprovedBy, Message: "allowed by " + why}, nil
}
