package cards

import (
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// DingTalk card data. An interactive card (互动卡片高级版) is a template made
// once in the DingTalk card platform plus a cardParamMap of variables, all
// strings. DingTalkCardData fills those variables; the template shows them
// and its two buttons (回传请求, params action / approval_id /
// payload_sha256) are visible only while the variable "buttons" is "true".
//
// Keys: title, summary, preview, risk, risk_text (the risk in words), tool,
// reason, about (what the call does, for its approver), requester (the name
// DingTalk gave with the message, else the id), requested ("Requested by … ·
// valid until 14:32 CST", empty on a final card's data), approvers,
// expires_at, approval_id, payload_sha256, short_hash, status ("pending",
// "processing" or a final approval.Status), status_text (the status
// sentence), decided_by, comment (the decider's), result (what follows the
// status sentence: the tool's result, or why it failed or froze; never the
// sentence again), final ("true"/"false"), buttons ("true"/"false") and
// markdown (the whole view as Markdown, for a template with a single
// markdown block).

// DingTalkStatusPending and DingTalkStatusProcessing are the card's status
// while it waits and between a click and its outcome.
const (
	DingTalkStatusPending    = "pending"
	DingTalkStatusProcessing = "processing"
)

// DingTalkCardData returns the cardParamMap of v (pending or final).
func DingTalkCardData(v View, lang string) map[string]string {
	m := map[string]string{
		"title":          v.Title,
		"summary":        strings.TrimSpace(v.Summary),
		"preview":        v.Preview,
		"risk":           v.Risk.String(),
		"tool":           v.Tool,
		"reason":         v.Reason,
		"about":          v.About,
		"risk_text":      riskOf(v),
		"requester":      v.requesterShown(),
		"requested":      requestedLine(v, v.requesterShown(), lang),
		"approvers":      v.Approvers,
		"approval_id":    string(v.ApprovalID),
		"payload_sha256": v.PayloadSHA256,
		"short_hash":     v.ShortHash,
		"expires_at":     "",
		"markdown":       DingTalkMarkdown(v, lang, false),
	}
	if !v.ExpiresAt.IsZero() {
		m["expires_at"] = formatTime(v.ExpiresAt, v.Zone)
	}
	if v.Final {
		m["status"] = string(v.Status)
		m["status_text"] = statusWords(v)
		m["decided_by"] = string(v.DecidedBy)
		m["comment"] = v.Comment
		m["result"] = v.Result
		m["requested"] = ""
		m["final"] = "true"
		m["buttons"] = "false"
	} else {
		m["status"] = DingTalkStatusPending
		m["status_text"] = dingTalkWords(lang).pending
		m["decided_by"] = ""
		m["comment"] = ""
		m["result"] = ""
		m["final"] = "false"
		m["buttons"] = "true"
	}
	return m
}

// DingTalkProcessingData is the card update answered to a click while the
// decision has not ended: buttons hidden, status "processing". Only these
// keys change (the update is by key).
func DingTalkProcessingData(lang string) map[string]string {
	return map[string]string{
		"status":      DingTalkStatusProcessing,
		"status_text": dingTalkWords(lang).processing,
		"final":       "false",
		"buttons":     "false",
	}
}

// DingTalkOutcomeData is the card update answered to a click once its
// outcome is known: buttons hidden and the outcome's status, words and
// result excerpt. Only these keys change (the update is by key); the full
// final card follows through DingTalkCardData.
func DingTalkOutcomeData(o approval.Outcome, text approval.OutcomeText, lang string) map[string]string {
	words := text.With(lang).Text(o.Status)
	if words == "" {
		words = string(o.Status)
	}
	m := map[string]string{
		"status":      string(o.Status),
		"status_text": words,
		"decided_by":  string(o.DecidedBy),
		"final":       "true",
		"buttons":     "false",
	}
	switch o.Status {
	case approval.StatusExecuted, approval.StatusReplayed, approval.StatusFailed, approval.StatusFrozen:
		m["result"] = excerpt(Detail(o), MaxResultExcerpt)
	case approval.StatusAlreadyDecided, approval.StatusUnauthorized, approval.StatusTampered, approval.StatusMissing:
		// The approval itself may still be pending (someone else's click is
		// being decided, or this user may not decide): say so without
		// claiming it ended.
		m["final"] = "false"
	}
	return m
}

// DingTalkMarkdown renders v as the robot markdown message used when no
// card template is configured (the typed path): Markdown(v) whose how-to
// line asks to "@bot 确认 / @bot 取消" in a group (group bots only hear
// messages that mention them), or to reply 确认 / 取消 in a 1:1 chat.
// The "markdown" card variable uses the 1:1 wording.
func DingTalkMarkdown(v View, lang string, group bool) string {
	md := Markdown(v, lang)
	if v.Final {
		return md
	}
	how := dingTalkWords(lang).howDirect
	if group {
		how = dingTalkWords(lang).howGroup
	}
	return strings.Replace(md, labelsFor(lang).howMD, how, 1)
}

// DingTalkMarkdownTitle is the title of the markdown message (the text of
// the chat list and of notifications).
func DingTalkMarkdownTitle(v View) string {
	if v.Final {
		return statusWords(v)
	}
	return v.Title
}

type dingTalkLabels struct{ pending, processing, howGroup, howDirect string }

func dingTalkWords(lang string) dingTalkLabels {
	l := words.Of(lang)
	return dingTalkLabels{pending: words.Text(l, words.CardWaiting), processing: words.Text(l, words.CardProcessing),
		howGroup: words.Text(l, words.CardHowGroup), howDirect: words.Text(l, words.CardHowDirect)}
}
