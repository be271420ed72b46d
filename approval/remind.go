package approval

import (
	"slices"
	"time"
)

// MaxReminders is the most reminders one approval has (EngineConfig.Reminders).
const MaxReminders = 4

// MaxMentions is the most people a reminder mentions by name (Mentioned);
// the others are counted. Neither Feishu (a text message's <at> elements)
// nor DingTalk (a robot message's at.atUserIds) documents a maximum; 20 is
// DingTalk's cap on the user ids of one robot send to people
// (oToMessages/batchSend, docs/platform-rules.md), and keeps a reminder
// one short line on a phone.
const MaxMentions = 20

// ValidReminders reports whether fs can be an approval's reminders: at
// most MaxReminders fractions, each above 0 and below 1, ascending.
func ValidReminders(fs []float64) bool {
	if len(fs) > MaxReminders {
		return false
	}
	for i, f := range fs {
		if !(f > 0 && f < 1) || (i > 0 && f <= fs[i-1]) {
			return false
		}
	}
	return true
}

// ReminderAt returns when reminder n of a is due: CreatedAt plus that
// fraction of the window, in whole milliseconds (what every store keeps).
func (a *Approval) ReminderAt(n int) time.Time {
	if n < 0 || n >= len(a.Reminders) {
		return time.Time{}
	}
	w := a.ExpiresAt.Sub(a.CreatedAt)
	return a.CreatedAt.Add(time.Duration(a.Reminders[n] * float64(w)).Truncate(time.Millisecond))
}

// NextReminder returns the first reminder of a not yet behind it and when
// it is due, or false when none is left.
func (a *Approval) NextReminder() (n int, at time.Time, ok bool) {
	if a.Reminded < 0 || a.Reminded >= len(a.Reminders) {
		return 0, time.Time{}, false
	}
	return a.Reminded, a.ReminderAt(a.Reminded), true
}

// DueReminder returns the latest reminder of a that is due at now and not
// yet behind it: when the sweeper comes late and two are due, only the
// later one is sent. False when none is due.
func (a *Approval) DueReminder(now time.Time) (int, bool) {
	n, at, ok := a.NextReminder()
	if !ok || now.Before(at) {
		return 0, false
	}
	for n+1 < len(a.Reminders) && !now.Before(a.ReminderAt(n+1)) {
		n++
	}
	return n, true
}

// Mentioned returns the people a reminder of a names, at most max (and
// how many more there are): those its rule and the escalation steps taken
// let approve it by name (the requester under the rule "requester", the
// listed people of mode users, less the requester under four eyes), each
// once. Under the rule "chat" it names nobody: anyone in the chat may.
func (a *Approval) Mentioned(max int) (names []UserID, more int) {
	var all []UserID
	add := func(u UserID) {
		if u != "" && !slices.Contains(all, u) && !(a.Approvers.NotRequester && u == a.Requester) {
			all = append(all, u)
		}
	}
	switch a.Approvers.Mode {
	case "", ApproverRequester:
		add(a.Requester)
	case ApproverUsers:
		for _, u := range a.Approvers.Users {
			add(u)
		}
	}
	for _, u := range a.EscalationUsers() {
		add(u)
	}
	if len(all) > max {
		return all[:max], len(all) - max
	}
	return all, 0
}

// RemindCode is the verdict of Store.Remind.
type RemindCode string

// Remind codes.
const (
	RemindTaken   RemindCode = "taken"   // this call took a reminder: send it
	RemindNotDue  RemindCode = "not_due" // the next reminder is later; nothing changed
	RemindNone    RemindCode = "none"    // nothing to send: not pending, expired, or every reminder behind it
	RemindMissing RemindCode = "missing" // no such approval
)

// RemindResult is the output of Store.Remind.
type RemindResult struct {
	// Code is the verdict.
	Code RemindCode
	// Approval is the record after the call (nil when missing).
	Approval *Approval
	// N is the index in Approval.Reminders of the reminder this call took
	// (RemindTaken only).
	N int
}
