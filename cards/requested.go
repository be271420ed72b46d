package cards

import (
	"regexp"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/words"
)

// requesterShown is who asked as a card names them: the name their
// platform gave, else their id.
func (v View) requesterShown() string {
	if v.RequesterName != "" {
		return v.RequesterName
	}
	return string(v.Requester)
}

// untilTime is the expiry as a pending card says it, in the view's zone:
// the time of day ("14:32 CST"), with the date when the approval was not
// asked for the same day.
func untilTime(v View) string {
	zone := v.Zone
	if zone == nil {
		zone = time.UTC
	}
	e, c := v.ExpiresAt.In(zone), v.CreatedAt.In(zone)
	if v.CreatedAt.IsZero() || e.YearDay() != c.YearDay() || e.Year() != c.Year() {
		return e.Format("2006-01-02 15:04 MST")
	}
	return e.Format("15:04 MST")
}

// ReminderText is the reminder of a pending approval as a chat reads it
// (approval.Notifier.Remind), in lang: its code, who asked, until when
// and who may approve, then, unless v is redacted (a private approval),
// what it would do. v.Code names it ("" : the approval's own short code).
func ReminderText(v View, lang string) string {
	code := v.Code
	if code == "" {
		code = approval.ShortCode(v.ApprovalID, 4)
	}
	s := words.In(lang, words.ReminderLine, code, v.requesterShown(), untilTime(v), v.Approvers)
	if !v.Redacted && v.Summary != "" {
		s += "\n" + words.In(lang, words.ReminderWhat, clip.Runes(clip.FirstLine(v.Summary), 120))
	}
	return s
}

// requestedLine is "Requested by <who> · valid until 14:32 CST" ("由 张三
// 发起 · 14:32 CST 前有效"), who as given; without an expiry, "" .
func requestedLine(v View, who, lang string) string {
	if v.ExpiresAt.IsZero() {
		return ""
	}
	return words.In(lang, words.CardRequestedUntil, who, untilTime(v))
}

// feishuUserID matches the ids Feishu gives people (open_id ou_…, union_id
// on_…): only such an id is put in a mention, so nothing else can reach the
// card's markdown as markup.
var feishuUserID = regexp.MustCompile(`^o[un]_[A-Za-z0-9]{1,64}$`)

// feishuRequested is the requested line of a Feishu card: a markdown
// element that mentions a Feishu requester (<at id=ou_…></at>: the client
// shows their name), else plain text with the name or id as it is.
func feishuRequested(v View, lang string) map[string]any {
	if feishuUserID.MatchString(string(v.Requester)) {
		// The catalogue's sentence, with the mention in place of a name
		// that cannot fake markup (a placeholder no sentence holds).
		const slot = "\x00"
		line := escapeMD(requestedLine(v, slot, lang))
		return markdownEl(replaceOnce(line, slot, "<at id="+string(v.Requester)+"></at>"))
	}
	return plainDiv(requestedLine(v, v.requesterShown(), lang))
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}
