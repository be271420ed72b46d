package approval

import (
	"errors"
	"slices"
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

// Private reports whether a is shown, in its chat, to the people who may
// see it only (MaySee), everyone else seeing one redacted line: its rule
// is privacy group, its chat is a group chat, and its approver rule is not
// "chat" (under which everyone in the chat may approve, so nobody there is
// an onlooker). A 1:1 chat shows everything.
func (a *Approval) Private() bool {
	return a != nil && a.Privacy.group() && a.Group && a.Approvers.Mode != ApproverChat
}

// MaySee reports whether u may see the whole of a: its arguments,
// preview, result and the answer of its turn. Everyone may see an
// approval that is not private; of a private one, its requester and the
// people its approver rule allows to approve (mode users: the listed
// users; mode requester: the requester), and the people the escalation
// steps taken so far listed. It is the one place that
// decides; Viewers lists the people it allows, to send them the card.
func (a *Approval) MaySee(u UserID) bool {
	if a == nil {
		return false
	}
	if !a.Private() {
		return true
	}
	if u == "" {
		return false
	}
	if u == a.Requester {
		return true
	}
	if a.Approvers.Mode == ApproverUsers && slices.Contains(a.Approvers.Users, u) {
		return true
	}
	// The people a step of its timed escalation added (mode users) may
	// decide it, so they see it; a step of mode chat shows it whole in
	// its chat, where everyone may decide.
	return slices.Contains(a.EscalationUsers(), u)
}

// Viewers lists the people MaySee allows to see a private approval, the
// requester first, each once: to whom its whole card is sent. It names
// the candidates (the requester, the approver rule's users, the
// escalation steps' users) and keeps
// those MaySee allows, so MaySee stays the one that decides.
func (a *Approval) Viewers() []UserID {
	var out []UserID
	for _, u := range append(append([]UserID{a.Requester}, a.Approvers.Users...), a.EscalationUsers()...) {
		if u != "" && !slices.Contains(out, u) && a.MaySee(u) {
			out = append(out, u)
		}
	}
	return out
}

// GrantMaySee reports whether u may see the whole of grant g (its tool
// and its payload's summary), given a, the approval that granted it
// (g.ApprovalID): MaySee of a, so a grant of a private approval is seen
// by the people who may see that approval. Without its record (a nil or
// another approval: gone, unreadable) only the grantee may: fail closed.
// u "" stands for everyone in a chat (an answer the whole chat reads).
func GrantMaySee(g Grant, a *Approval, u UserID) bool {
	if a == nil || a.ID != g.ApprovalID {
		return u != "" && u == g.User
	}
	return a.MaySee(u)
}

// GrantMayRevoke reports whether u, asking in chatID of channel, may
// revoke grant g, given a, the approval that granted it: its grantee
// (the requester whose calls it lets run), or someone a's approver rule
// (or a step of its escalation taken) lets decide a there. Without a's
// record only the grantee may.
func GrantMayRevoke(g Grant, a *Approval, u UserID, channel, chatID string) bool {
	if u == "" {
		return false
	}
	if u == g.User {
		return true
	}
	return a != nil && a.ID == g.ApprovalID && a.AllowsIn(u, Approve, channel, chatID)
}
