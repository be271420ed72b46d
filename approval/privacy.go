package approval

import (
	"errors"
	"strings"
)

// Privacy says who sees an approval in a group chat: its arguments,
// preview and result, and the answer of the turn that asked for it.
type Privacy string

// Privacy rules.
const (
	// PrivacyNone shows the approval to everyone in its chat (the default).
	PrivacyNone Privacy = "none"
	// PrivacyGroup shows it, in a group chat, only to its requester and
	// the people who may approve it (MaySee); everyone else sees one
	// redacted line.
	PrivacyGroup Privacy = "group"
)

// validate refuses a rule that is neither group nor none (nor empty).
func (p Privacy) validate() error {
	switch Privacy(strings.ToLower(string(p))) {
	case "", PrivacyNone, PrivacyGroup:
		return nil
	}
	return errors.New("\"" + string(p) + "\" is not group or none")
}

// group reports whether p is the rule group, in any case.
func (p Privacy) group() bool { return strings.EqualFold(string(p), string(PrivacyGroup)) }

// privacy is the privacy of a call of risk r: the tool's own (tool, when
// set), else privacy.<r>, else none. A rule that is not group is none:
// Validate refuses anything else before a policy exists.
func (p *Policy) privacy(r Risk, tool Privacy) Privacy {
	if tool == "" {
		for k, v := range p.cfg.Privacy {
			if strings.EqualFold(k, r.String()) {
				tool = v
			}
		}
	}
	if tool.group() {
		return PrivacyGroup
	}
	return PrivacyNone
}
