// Who may decide an approval, and who may see it: the whole rule, in this
// one file. Everything else asks it; the Redis claim mirrors it (below).
//
// # Deciding
//
// Approval.AllowsIn(actor, verb, channel, chatID) is the one entry point:
// may actor take verb (approve or reject; a resolution of a frozen
// approval is judged as an approve) on a, deciding from chatID of channel
// (the chat of the clicked card or the typed reply, as the platform
// reported it; "" when it named none), as a stands now: with the
// escalation steps taken so far (Approval.Escalated; a step that is due
// but not yet taken by the sweeper adds nobody). The clauses, in order;
// the first that applies answers:
//
//  1. Nobody: an actor the platform did not name ("") may not.
//  2. Withdraw: the requester may always reject their own request, from
//     anywhere.
//  3. Four eyes: a rule with NotRequester (high_needs_other, on a HIGH
//     call) keeps the requester out of clauses 4 and 5: neither the
//     approval's rule nor an escalation step lets them approve.
//  4. The approval's own rule (Approval.Approvers, copied from the policy
//     when it was asked, so a config reload does not change it):
//     - requester (the default, also an empty mode): the requester, from
//     anywhere;
//     - users: the listed people, from anywhere;
//     - chat: anyone deciding in the approval's chat (InChat: its
//     approvers' chat, approve_in, when it has one, and then not its own
//     chat; else its own chat; an unknown chat never is), and the
//     requester from anywhere when it has no approvers' chat (they are in
//     their own chat by definition: a DingTalk 1:1 card names no chat on a
//     click).
//  5. The escalation steps taken: a step of mode users lets its listed
//     people decide from anywhere, a step of mode chat anyone deciding in
//     its chat (Escalation.To).
//  6. Nobody else.
//
// Quorum: where the rule needs more than one approval (ApproverRule.Needed),
// an approve that AllowsIn allows is a vote, and Approval.CountVote counts
// each person once (a second approve of the same person changes nothing);
// the approve that reaches the quorum claims the approval. The people of a
// step count like anyone else. A reject that AllowsIn allows is a veto,
// whatever the votes. ApproverRule.Reachable says, when the approval is
// asked, whether its own rule can ever reach the quorum for its requester
// (Engine.Request refuses one that never could).
//
// # Seeing
//
// Approval.MaySee(u) is the other entry point: may u see the whole of a
// (its arguments, preview, result, and the answer of its turn). Everyone
// may see an approval that is not Private (privacy group, a group chat,
// and an own rule other than chat, under which nobody in the chat is an
// onlooker); of a private one, its requester, the people its own rule
// lists (mode users), and the people the steps taken list. Viewers lists
// them, to send them the whole card. A step of mode chat shows the whole
// card in its chat, where everyone may decide it (channels.Router.showStep);
// MaySee, which knows no chat, does not count its people. GrantMaySee and
// GrantMayRevoke say the same of a grant, by the approval that granted it.
//
// # Where each clause is judged
//
// Clauses 1 to 5 and the quorum are judged inside the stores' one atomic
// step (Store.Claim; Store.Resolve judges clauses 1 to 5 of an approve), on the record as it
// is then, so that no decision can slip between a check and the claim:
// memstore calls AllowsIn and CountVote under its lock; redisstore's
// scripts (scripts.go) mirror them in Lua: the function allows, clause by
// clause in this order, read from the record's fields r, m, u, x, ch, ci,
// ac, ai and, at clause 5 only, eu and ep (EscalationUsers and
// EscalationPlaces as the store wrote them when the steps were taken), and
// claimLua's vote loop over the fields y1, y2, … up to qu (CountVote).
// storetest's mayDecideCases run every clause against both stores and
// check each answer against AllowsIn and CountVote, so the three cannot
// disagree; mayseeCases check that MaySee answers the same of the record
// each store gives back.
//
// Judged in Go only, before the claim, because nothing they read can
// change between the check and the claim so as to turn a permission into
// a refusal (the rule, requester and approvers' chat of a record never
// change once asked; its steps are only ever added):
//   - the rule of an edited call (Engine.Decide with Decision.Edits): the
//     approver must also be allowed by each edited call's rule
//     (Approval.allowsUnder, clauses 1 to 5 with that rule), so an edit
//     that raises the risk is refused to whom the raised rule keeps out.
//     The edited rule comes from the policy, not the record; the claim
//     then judges the approval's own rule again, atomically.
//   - Reachable, when the approval is asked, before anything is stored.
//   - no edit and no mixed per-call decision under a quorum
//     (ErrQuorumNoEdit): the rule never changes.
//   - MaySee and Viewers: who is shown what; no decision rests on them.
//   - GrantMayRevoke, in the router before Engine.Revoke: revoking only
//     takes a permission away, and the approval's steps only add people.
//
// Allows (clauses 1 to 4, told whether the decision is in the chat) and
// EscalationAllows (clauses 1 to 3, then 5) are the halves of AllowsIn for
// a caller that knows no chat but can tell whether a decision is in it
// (the HTTP API: its tenant).

package approval

import "slices"

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
	// Quorum is how many distinct allowed people must approve before the
	// calls run (M of N); 0 and 1 mean one. Any one allowed person's
	// reject rejects (a veto).
	Quorum int `json:"quorum,omitempty"`
}

// AllowsIn is the whole rule of a decision (clauses 1 to 6 at the top of
// this file): whether actor may take verb on a, deciding from chatID of
// channel ("" when unknown), with the escalation steps taken so far. Both
// stores judge claims and resolutions with it (redisstore in Lua).
func (a *Approval) AllowsIn(actor UserID, verb Verb, channel, chatID string) bool {
	return a.allowsUnder(a.Approvers, actor, verb, channel, chatID)
}

// allowsUnder is AllowsIn by rule r in place of a's own: an edited call's
// (edit.go). Its four eyes (clause 3) keeps the requester out of the
// steps too.
func (a *Approval) allowsUnder(r ApproverRule, actor UserID, verb Verb, channel, chatID string) bool {
	if ok, settled := a.settles(r, actor, verb); settled {
		return ok
	}
	return a.admits(r, actor, a.InChat(channel, chatID)) || a.stepAdmits(actor, channel, chatID)
}

// Allows is clauses 1 to 4 of AllowsIn, inChat saying that the decision
// was taken in a's chat (InChat): a's own rule, without its escalation.
func (a *Approval) Allows(actor UserID, verb Verb, inChat bool) bool {
	if ok, settled := a.settles(a.Approvers, actor, verb); settled {
		return ok
	}
	return a.admits(a.Approvers, actor, inChat)
}

// EscalationAllows is clauses 1 to 3 and 5 of AllowsIn: whether a step of
// a's escalation taken so far lets actor take verb from chatID of channel
// (or the requester withdraws).
func (a *Approval) EscalationAllows(actor UserID, verb Verb, channel, chatID string) bool {
	if ok, settled := a.settles(a.Approvers, actor, verb); settled {
		return ok
	}
	return a.stepAdmits(actor, channel, chatID)
}

// Allows is Approval.Allows of a request of requester under r alone (no
// approvers' chat, no escalation).
func (r ApproverRule) Allows(actor, requester UserID, verb Verb, inChat bool) bool {
	return (&Approval{Requester: requester, Approvers: r}).Allows(actor, verb, inChat)
}

// settles is clauses 1 to 3: settled when one of them answers (ok), before
// any rule is read.
func (a *Approval) settles(r ApproverRule, actor UserID, verb Verb) (ok, settled bool) {
	switch {
	case actor == "": // 1. nobody
		return false, true
	case verb == Reject && actor == a.Requester: // 2. withdraw
		return true, true
	case r.NotRequester && actor == a.Requester: // 3. four eyes
		return false, true
	}
	return false, false
}

// admits is clause 4: whether rule r of a lets actor decide, inChat
// saying that the decision was taken in a's chat (InChat).
func (a *Approval) admits(r ApproverRule, actor UserID, inChat bool) bool {
	switch r.Mode {
	case ApproverChat:
		return inChat || actor == a.Requester && a.ApproveIn == nil
	case ApproverUsers:
		return slices.Contains(r.Users, actor)
	default:
		return actor == a.Requester
	}
}

// stepAdmits is clause 5: whether a step of a's escalation taken so far
// lets actor decide from chatID of channel: a step of mode users its
// listed people from anywhere, a step of mode chat anyone deciding in its
// chat. The stores keep what it reads as EscalationUsers and
// EscalationPlaces.
func (a *Approval) stepAdmits(actor UserID, channel, chatID string) bool {
	if slices.Contains(a.EscalationUsers(), actor) {
		return true
	}
	return chatID != "" && slices.ContainsFunc(a.EscalationPlaces(), func(p Place) bool { return p.Channel == channel && p.ChatID == chatID })
}

// DecidesIn returns the chat where a's approvers decide: ApproveIn when
// set, else the approval's own chat.
func (a *Approval) DecidesIn() Place {
	if a.ApproveIn != nil {
		return *a.ApproveIn
	}
	return Place{Channel: a.Channel, ChatID: a.ChatID}
}

// InChat reports whether a decision taken in chatID of channel is taken
// in a's chat for the rule "chat" (clause 4): the approvers' chat when
// ApproveIn is set (then a decision in the requester's own chat is not),
// else the approval's own chat. An unknown chat ("") never is.
func (a *Approval) InChat(channel, chatID string) bool {
	p := a.DecidesIn()
	return chatID != "" && channel == p.Channel && chatID == p.ChatID
}

// EscalationUsers returns the people the steps of a's escalation taken so
// far list (mode users), each once, as the stores keep them for their
// claim (clause 5; Redis: field eu).
func (a *Approval) EscalationUsers() []UserID {
	var out []UserID
	for _, st := range a.Taken() {
		if st.Approvers.Mode != ApproverUsers {
			continue
		}
		for _, u := range st.Approvers.Users {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	return out
}

// EscalationPlaces returns the chats of the steps of a's escalation taken
// so far whose rule is "chat" (anyone deciding there may decide), each
// once, as the stores keep them for their claim (clause 5; Redis: field
// ep).
func (a *Approval) EscalationPlaces() []Place {
	var out []Place
	for _, st := range a.Taken() {
		if st.Approvers.Mode == ApproverChat && !slices.Contains(out, st.To) {
			out = append(out, st.To)
		}
	}
	return out
}

// Needed returns how many distinct people must approve: the quorum, at
// least 1.
func (r ApproverRule) Needed() int {
	return max(1, r.Quorum)
}

// CountVote counts v, an approve that AllowsIn allows, towards a's quorum
// and answers what the claim does: ClaimOK where one approval decides, or
// when v reaches the quorum (v is then the last of a.Votes); ClaimVoted
// when v is counted and the votes are still fewer than the quorum;
// ClaimVotedBefore when v's person has approved already (nothing is
// added). Claim calls it under its lock (memstore) or mirrors it
// (redisstore's claimLua).
func (a *Approval) CountVote(v Vote) ClaimCode {
	need := a.Approvers.Needed()
	if need == 1 {
		return ClaimOK
	}
	if slices.ContainsFunc(a.Votes, func(x Vote) bool { return x.By == v.By }) {
		return ClaimVotedBefore
	}
	a.Votes = append(a.Votes, v)
	if len(a.Votes) < need {
		return ClaimVoted
	}
	return ClaimOK
}

// Reachable reports whether enough distinct people may approve a request
// of requester to reach the quorum: mode users with fewer allowed people
// (the requester taken out when NotRequester) than the quorum never can,
// and mode requester only ever has one. Mode chat can: anyone in the chat
// may approve. (The people of escalation steps are not counted: a step
// may never be taken.)
func (r ApproverRule) Reachable(requester UserID) bool {
	n := r.Needed()
	switch r.Mode {
	case ApproverUsers:
		allowed := 0
		for _, u := range r.Users {
			if u != "" && !(r.NotRequester && u == requester) {
				allowed++
			}
		}
		return allowed >= n
	case ApproverChat:
		return true
	default:
		return n == 1 && !r.NotRequester
	}
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
// approval that is not private; of a private one, its requester, the
// people its own rule lists (mode users), and the people the escalation
// steps taken so far list. It is the one place that decides; Viewers
// lists the people it allows, to send them the card.
func (a *Approval) MaySee(u UserID) bool {
	switch {
	case a == nil:
		return false
	case !a.Private():
		return true
	case u == "":
		return false
	case u == a.Requester:
		return true
	case a.Approvers.Mode == ApproverUsers && slices.Contains(a.Approvers.Users, u):
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
// escalation steps' users) and keeps those MaySee allows, so MaySee stays
// the one that decides.
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
// (the requester whose calls it lets run), or someone AllowsIn lets
// approve a there. Without a's record only the grantee may.
func GrantMayRevoke(g Grant, a *Approval, u UserID, channel, chatID string) bool {
	if u == "" {
		return false
	}
	if u == g.User {
		return true
	}
	return a != nil && a.ID == g.ApprovalID && a.AllowsIn(u, Approve, channel, chatID)
}
