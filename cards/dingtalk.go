package cards

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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
// sentence again), final ("true"/"false"), buttons ("true"/"false"),
// markdown (the whole view as Markdown, for a template with a single
// markdown block); on a pending card also code (the approval's short code
// in its chat, for 确认 <code>; absent when unknown), and on a MEDIUM
// card that may grant grant_buttons "true" (the template shows 仅本次 and
// 本会话允许 instead of 确认, their params action approve and grant once
// / session; absent otherwise) and grant_window (the window in words,
// "5m"); a requester's status card (View.WaitsIn, approve_in) is
// pending with buttons "false" and status_text saying where it waits; a
// batch's card also has per_call_hint (where to decide call by
// call while it waits, "" once it has ended).
//
// A frozen approval (its effect unknown) is resolved on its final card:
// the variable "resolve_buttons" is "true" while it is frozen (else
// "false"), and the template shows three buttons (回传请求, params action
// "resolve", resolution done / retry / abandon, approval_id,
// payload_sha256) only then; "resolution" names how it was resolved
// (done, retry, abandon, or "").

// DingTalkStatusPending and DingTalkStatusProcessing are the card's status
// while it waits and between a click and its outcome.
const (
	DingTalkStatusPending    = "pending"
	DingTalkStatusProcessing = "processing"
)

// DingTalkCardData returns the cardParamMap of v (pending or final),
// each value within DingTalkMaxValue bytes (DingTalkFit).
func DingTalkCardData(v View, lang string) map[string]string {
	if v.Redacted {
		return dingTalkFitAll(dingTalkRedacted(v, lang), lang)
	}
	return dingTalkFitAll(dingTalkCardData(v, lang), lang)
}

func dingTalkCardData(v View, lang string) map[string]string {
	m := map[string]string{
		"title":           v.Title,
		"summary":         strings.TrimSpace(v.Summary),
		"preview":         v.Preview,
		"risk":            v.Risk.String(),
		"tool":            v.Tool,
		"reason":          v.Reason,
		"about":           v.About,
		"risk_text":       riskOf(v),
		"requester":       v.requesterShown(),
		"requested":       requestedLine(v, v.requesterShown(), lang),
		"approvers":       v.Approvers,
		"approval_id":     string(v.ApprovalID),
		"payload_sha256":  v.PayloadSHA256,
		"short_hash":      v.ShortHash,
		"expires_at":      "",
		"markdown":        DingTalkMarkdown(v, lang, false),
		"resolve_buttons": "false",
		"resolution":      string(v.Resolution),
		"answer_buttons":  "false",
		"questions":       strconv.Itoa(len(v.Questions)),
	}
	if len(v.Resolve) > 0 {
		m["resolve_buttons"] = "true"
	}
	if v.Code != "" && !v.Final {
		m["code"] = v.Code
	}
	if v.Progress != "" {
		// A quorum's votes: "1/2 已批准：张三".
		m["progress"] = v.Progress
	}
	if v.Escalated != "" && !v.Final {
		// A timed escalation's step taken: who else was asked.
		m["escalated"] = v.Escalated
	}
	if v.ApproveOnce != nil && !v.Final {
		m["grant_buttons"], m["grant_window"] = "true", v.GrantWindow
	}
	if v.ApproveAlways != nil && !v.Final {
		// Another agent's standing rule: the template's always button
		// (its param grant=always) shows while always_button is true.
		m["always_button"], m["always_text"] = "true", v.Always
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
		if v.WaitsIn != "" {
			// The status card of the requester's chat (approve_in).
			m["status_text"] = WaitsInLine(v, lang)
			m["buttons"] = "false"
		} else if v.Answer != nil {
			// A question: the template's 确认 cannot answer it; its
			// answer block (answer_buttons) does, or a typed answer.
			m["buttons"] = "false"
			m["answer_buttons"] = "true"
			m["status_text"] = words.In(lang, words.QuestionCardHow)
			m["typed_hint"] = QuestionTyped(v, lang)
		}
	}
	if v.Questions != nil {
		dingTalkQuestions(m, v, lang)
	}
	if len(v.Calls) > 1 {
		// The template's two buttons decide every call alike; per call is
		// decided on the web page or with the API (per_call_hint, shown
		// while pending; "" once final).
		m["per_call_hint"] = ""
		if !v.Final && v.WaitsIn == "" {
			m["per_call_hint"] = words.In(lang, words.CardPerCallElsewhere)
		}
	}
	return m
}

// DingTalkProcessingData is the card update answered to a click while the
// decision has not ended: buttons hidden, status "processing". Only these
// keys change (the update is by key).
func DingTalkProcessingData(lang string) map[string]string {
	return map[string]string{
		"status":         DingTalkStatusProcessing,
		"status_text":    dingTalkWords(lang).processing,
		"final":          "false",
		"buttons":        "false",
		"answer_buttons": "false",
	}
}

// DingTalkOutcomeData is the card update answered to a click once its
// outcome is known: buttons hidden and the outcome's status, words and
// result excerpt. Only these keys change (the update is by key); the full
// final card follows through DingTalkCardData. Each value is within
// DingTalkMaxValue bytes (DingTalkFit).
func DingTalkOutcomeData(o approval.Outcome, text approval.OutcomeText, lang string) map[string]string {
	return dingTalkFitAll(dingTalkOutcomeData(o, text, lang), lang)
}

func dingTalkOutcomeData(o approval.Outcome, text approval.OutcomeText, lang string) map[string]string {
	words := text.TextIn(lang, o.Status)
	if words == "" {
		words = string(o.Status)
	}
	m := map[string]string{
		"status":          string(o.Status),
		"status_text":     words,
		"decided_by":      string(o.DecidedBy),
		"final":           "true",
		"buttons":         "false",
		"answer_buttons":  "false",
		"resolve_buttons": "false",
		"resolution":      string(o.Resolution),
	}
	if o.Status == approval.StatusFrozen {
		m["resolve_buttons"] = "true"
	}
	if o.Resolution != "" {
		// Worded as the final card words it (see finish).
		v := finish(View{}, o, text, lang)
		m["status_text"], m["result"] = v.StatusText, v.Result
	}
	switch o.Status {
	case approval.StatusExecuted, approval.StatusReplayed, approval.StatusFailed, approval.StatusFrozen:
		if o.Resolution == "" {
			m["result"] = excerpt(Detail(o), MaxResultExcerpt)
		}
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
	if v.Final || v.WaitsIn != "" || v.Redacted {
		return md // a status card says where it waits, not how to answer
	}
	if v.Answer != nil {
		// A question: answered by the answer command, which a group
		// hears only with the bot mentioned.
		if !group {
			return md
		}
		typed := escapeMD(QuestionTyped(v, lang))
		return strings.Replace(md, typed, escapeMD(words.In(lang, words.QuestionTypedGroup))+typed, 1)
	}
	how := dingTalkWords(lang).howDirect
	if group {
		how = dingTalkWords(lang).howGroup
	}
	if v.Quorum > 1 {
		// Decided whole, by several people: no per-call choice, no edit.
		return strings.Replace(md, labelsFor(lang).howMD, how, 1)
	}
	if len(v.Calls) > 1 {
		// No per-call choice in a typed reply: say where it is.
		how += "  \n" + words.In(lang, words.CardPerCallElsewhere)
	}
	// No arguments input on DingTalk either.
	how += "  \n" + words.In(lang, words.CardEditElsewhere)
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

// DingTalkMaxValue is the most bytes a cardParamMap value may hold:
// "参数值（最长不超过1KB）" (doc create-and-deliver-cards). A longer value
// refuses the whole card.
const DingTalkMaxValue = 1024

// DingTalkFit returns s whole when it fits in a cardParamMap value, else
// cut on a rune boundary and ended with the marker of lang
// (words.DingTalkValueCut: where the whole text is), within
// DingTalkMaxValue bytes.
func DingTalkFit(s, lang string) string { return dingTalkFitIn(s, DingTalkMaxValue, lang) }

// dingTalkFitIn is DingTalkFit within most bytes.
func dingTalkFitIn(s string, most int, lang string) string {
	if len(s) <= most {
		return s
	}
	mark := words.In(lang, words.DingTalkValueCut)
	n := max(most-len(mark), 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimRightFunc(s[:n], unicode.IsSpace) + mark
}

// dingTalkFitAll cuts every value of m that is too long (DingTalkFit).
func dingTalkFitAll(m map[string]string, lang string) map[string]string {
	for k, v := range m {
		m[k] = DingTalkFit(v, lang)
	}
	return m
}

// dingTalkQuestions sets a question card's per-question variables, for
// n = 1 … approval.MaxQuestions: q<n>_shown ("true" for the card's
// questions, "false" beyond), and for each question q<n>_text (its
// header, text and "(choose any)" on a multi-select; cut to fit before
// the default an empty answer takes, which stays), q<n>_options (one
// line per option, "1. Small — fast", numbered as an answer names them),
// q<n>_hint (the input's hint), q<n>_answer (the answer given, on a final
// card; "" before) and answer_<n>, the variable the template's input of
// question n is bound to, "" (its value comes back in the answer
// button's params).
func dingTalkQuestions(m map[string]string, v View, lang string) {
	for n := 1; n <= approval.MaxQuestions; n++ {
		k := strconv.Itoa(n)
		if n > len(v.Questions) {
			m["q"+k+"_shown"] = "false"
			continue
		}
		q := v.Questions[n-1]
		text := q.Question
		if q.Header != "" {
			text = "[" + q.Header + "] " + text
		}
		if q.Multi {
			text += " " + words.In(lang, words.QuestionMulti)
		}
		if i := strings.LastIndex(text, q.Default); q.Default != "" && i >= 0 && len(text) > DingTalkMaxValue {
			// Cut the question, never its default: what an empty answer
			// sends.
			tail := text[i:]
			text = dingTalkFitIn(text[:i], DingTalkMaxValue-len(tail), lang) + tail
		}
		var opts []string
		for j, o := range q.Options {
			line := strconv.Itoa(j+1) + ". " + o.Label
			if o.Description != "" {
				line += " — " + o.Description
			}
			opts = append(opts, line)
		}
		m["q"+k+"_shown"] = "true"
		m["q"+k+"_text"] = text
		m["q"+k+"_options"] = strings.Join(opts, "\n")
		m["q"+k+"_hint"] = words.In(lang, words.QuestionCardInput, n)
		m["q"+k+"_answer"] = q.Answer
		m["answer_"+k] = ""
	}
}
