package approval

import (
	"slices"
	"time"

	"github.com/hitlbot/hitlbot/words"
)

// Escalation is one step of an approval's timed escalation as the record
// keeps it (EscalationConfig, resolved when the approval was requested):
// After its request, if nobody has decided, the approval is also shown in
// To and Approvers may decide it too.
type Escalation struct {
	// After is the step's time, from the approval's CreatedAt.
	After time.Duration `json:"after"`
	// To is the chat that is also asked.
	To Place `json:"to"`
	// Approvers is who the step adds: mode users (the listed people,
	// wherever they decide) or chat (anyone deciding in To).
	// The approval's own rule's NotRequester keeps the requester out of
	// every step too (the claim reads it there).
	Approvers ApproverRule `json:"approvers"`
}

// NextEscalation returns the step of a that is taken next and when it is
// due, or false when every step has been taken (or a has none).
func (a *Approval) NextEscalation() (Escalation, time.Time, bool) {
	if a.Escalated < 0 || a.Escalated >= len(a.Escalation) {
		return Escalation{}, time.Time{}, false
	}
	st := a.Escalation[a.Escalated]
	return st, a.CreatedAt.Add(st.After), true
}

// Taken returns the escalation steps of a taken so far, in order.
func (a *Approval) Taken() []Escalation {
	return a.Escalation[:min(max(a.Escalated, 0), len(a.Escalation))]
}

// EscalatedWhoIn says, in lang, who the escalation steps taken so far let
// decide: their listed people and "anyone in <chat>" for a step of mode
// chat. Empty before the first step.
func (a *Approval) EscalatedWhoIn(lang string) string {
	var who []string
	for _, st := range a.Taken() {
		if st.Approvers.Mode == ApproverChat {
			who = append(who, words.In(lang, words.ApproversAnyoneIn, st.To.ChatID))
			continue
		}
		for _, u := range st.Approvers.Users {
			who = append(who, string(u))
		}
	}
	return joinIn(lang, dedupeStrings(who))
}

// EscalatedIn says, in lang, what a's escalation has done so far, for a
// card: "No decision within 10m: also asked in oc_oncall; ou_oncall may
// decide too". Empty before its first step.
func (a *Approval) EscalatedIn(lang string) string {
	taken := a.Taken()
	if len(taken) == 0 {
		return ""
	}
	last := taken[len(taken)-1]
	var chats []string
	for _, st := range taken {
		if !slices.Contains(chats, st.To.ChatID) {
			chats = append(chats, st.To.ChatID)
		}
	}
	return words.In(lang, words.EscalatedLine, words.Span(words.Of(lang), last.After), joinIn(lang, chats), a.EscalatedWhoIn(lang))
}

func joinIn(lang string, s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += words.In(lang, words.ApproversSep)
		}
		out += x
	}
	return out
}

func dedupeStrings(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
