package cards

import (
	"fmt"

	"github.com/hitlbot/hitlbot/words"
)

// Redact returns the onlookers' view of v, a view of a private approval
// (approval.Approval.Private) for the people of its group chat who may not
// see it (approval.Approval.MaySee): one line, "张三 asked for a HIGH risk
// action · waiting for approval (only 李四)", and once it has ended how
// it ended and who decided ("Executed (李四)"). It keeps the approval's
// id, risk, requester, who may approve and its times; it holds no
// summary, preview, reason, call, argument, result, comment, payload
// hash, short code or button: nothing a tool or a person said about the
// call. Every renderer shows a redacted view as that line alone.
func Redact(v View) View {
	return View{
		ApprovalID:    v.ApprovalID,
		Title:         v.Title,
		Risk:          v.Risk,
		RiskText:      v.RiskText,
		Requester:     v.Requester,
		RequesterName: v.RequesterName,
		CreatedAt:     v.CreatedAt,
		Zone:          v.Zone,
		Approvers:     v.Approvers,
		ExpiresAt:     v.ExpiresAt,
		Final:         v.Final,
		Status:        v.Status,
		StatusText:    v.StatusText,
		DecidedBy:     v.DecidedBy,
		Resolution:    v.Resolution,
		Redacted:      true,
		Step:          v.Step,
	}
}

// RedactedLine is the one line a redacted view shows, in lang, with who
// asked named as given (a name, an id, or a mention's placeholder).
func RedactedLine(v View, who, lang string) string {
	if !v.Final {
		return words.In(lang, words.RedactedPending, who, riskOf(v), v.Approvers)
	}
	end := statusWords(v)
	if v.DecidedBy != "" {
		end = words.In(lang, words.RedactedDecided, end, v.DecidedBy)
	}
	return words.In(lang, words.RedactedFinal, who, riskOf(v), end)
}

// redactedMarkdown is a redacted view as Markdown: a heading and the
// line.
func redactedMarkdown(v View, lang string) string {
	mark, title := riskMark(v.Risk), v.Title
	if v.Final {
		mark, title = statusMark(v.Status), statusWords(v)
	}
	return fmt.Sprintf("### %s %s\n\n%s\n", mark, escapeMD(title), escapeMD(RedactedLine(v, v.requesterShown(), lang)))
}

// redactedText is a redacted view as plain text.
func redactedText(v View, lang string) string {
	return fmt.Sprintf("[%s] %s\n%s\n", riskOf(v), v.Title, RedactedLine(v, v.requesterShown(), lang))
}

// feishuRedacted is a redacted view as a Feishu card: a header and the
// line, mentioning a Feishu requester (the client shows their name); no
// buttons.
func feishuRedacted(v View, lang string) map[string]any {
	template := FeishuRiskTemplate(v.Risk)
	title := riskMark(v.Risk) + " " + v.Title
	if v.Final {
		template, title = feishuStatusTemplate(v.Status), statusMark(v.Status)+" "+statusWords(v)
	}
	line := plainDiv(RedactedLine(v, v.requesterShown(), lang))
	if feishuUserID.MatchString(string(v.Requester)) {
		const slot = "\x00"
		line = markdownEl(replaceOnce(escapeMD(RedactedLine(v, slot, lang)), slot, "<at id="+string(v.Requester)+"></at>"))
	}
	return feishuCard(feishuHeader(title, riskOf(v), template), []any{line})
}

// dingTalkRedacted is the card data of a redacted view: every key the
// template reads, the ones that would say anything of the call empty
// (an update is by key: none may keep what the card said before), the
// line in summary and markdown, no buttons.
func dingTalkRedacted(v View, lang string) map[string]string {
	m := map[string]string{
		"title": v.Title, "summary": RedactedLine(v, v.requesterShown(), lang), "preview": "", "risk": v.Risk.String(),
		"tool": "", "reason": "", "about": "", "risk_text": riskOf(v), "requester": v.requesterShown(), "requested": "",
		"approvers": v.Approvers, "approval_id": string(v.ApprovalID), "payload_sha256": "", "short_hash": "", "expires_at": "",
		"markdown": redactedMarkdown(v, lang), "resolve_buttons": "false", "resolution": string(v.Resolution),
		"decided_by": string(v.DecidedBy), "comment": "", "result": "", "buttons": "false", "per_call_hint": "",
		"redacted": "true",
	}
	if v.Final {
		m["status"], m["status_text"], m["final"] = string(v.Status), statusWords(v), "true"
	} else {
		m["status"], m["status_text"], m["final"] = DingTalkStatusPending, dingTalkWords(lang).pending, "false"
	}
	return m
}
