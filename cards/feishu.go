package cards

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
)

// Feishu cards, in card JSON 2.0 ("schema":"2.0"). The SDK's card builders
// are 1.0 only, so the cards are plain maps; json.Marshal sorts their keys,
// which keeps the golden files stable.
//
// Card 2.0 rejects unknown attributes, so only documented ones are used:
// header{title, subtitle, template}, config{update_multi}, and body
// elements markdown, div{text: plain_text}, hr, column_set / column,
// form{name, elements}, input{name, placeholder, max_length, width} and
// button{type, text, name, form_action_type, behaviors:[{type: callback,
// value}]}. Text from the
// model or a tool (summary, requester, preview, result) never goes into
// markdown as markup: short facts are plain_text, and the preview and the
// result sit in fenced code blocks whose fence they cannot close.
//
// update_multi is always true: the card is shared by everyone in the chat
// and may be patched (Feishu requires it before and after a patch).
//
// A pending card's buttons sit in a form (card JSON 2.0 form container,
// at the card's root as Feishu requires) with one optional text input,
// FeishuReasonField: both buttons submit the form, so a click carries
// the button's callback value (action.value, what the router reads: ids
// and hash, never in a field a person can edit) and the typed reason
// (action.form_value.reason). Inside a form an input sends nothing by
// itself (no callback on Enter): only a button submits, so typing a
// reason can never approve. Every interactive child of a form has a name
// unique in the card, else Feishu refuses the submission. A batch card's
// form also holds a choice per call (percall.go), and every pending card
// an arguments input per call with an edit button when its arguments may
// be shown (edit.go).

// Feishu refuses cards over 30 KB: the long parts are cut (in runes).
const (
	MaxFeishuSummary = 1000
	MaxFeishuPreview = 4000
)

// FeishuReasonField is the name of a pending card's reason input: a
// click's action.form_value carries what was typed under it.
const FeishuReasonField = "reason"

// MaxFeishuReason is the reason input's max_length: what the engine keeps
// of a decision's comment (approval.MaxNoteRunes), within Feishu's range
// for an input (1 to 1000 characters). The client enforces it; the engine
// cuts whatever arrives to the same bound.
const MaxFeishuReason = approval.MaxNoteRunes

// The names of a pending card's form and buttons (unique in the card, as
// a form requires).
const (
	feishuFormName    = "decision"
	feishuApproveName = "approve"
	feishuRejectName  = "reject"
	// feishuApproveSessionName is the session approve button of a MEDIUM
	// card that may grant (feishuApproveName is then 仅本次).
	feishuApproveSessionName = "approve_session"

	// feishuApproveAlwaysName is the approve button of another agent's
	// standing rule (grant always).
	feishuApproveAlwaysName = "approve_always"
)

// FeishuCard returns the card of v: a pending card with the 确认 / 取消
// buttons (their callback value is the ButtonValue object), or, for a final
// view, a card of how it ended without buttons.
func FeishuCard(v View, lang string) map[string]any {
	if v.Redacted {
		return feishuRedacted(v, lang)
	}
	if v.Final {
		return feishuFit(v, func(v View) map[string]any { return feishuFinal(v, lang) })
	}
	return feishuFit(v, func(v View) map[string]any { return feishuPending(v, lang, true) })
}

// Feishu's card limits (doc feishu-cards/card-json-v2-structure;
// docs/platform-rules.md): at most 200 components in a card, and the
// message's request body at most 30 KB, the card's JSON being a string in
// it (escaped once more). feishuBodyOverhead is room for the request's
// other fields (receive_id, msg_type, uuid).
const (
	feishuMaxComponents = 200
	feishuMaxBody       = 30 * 1024
	feishuBodyOverhead  = 512
)

// The levels of a Feishu card's compaction (View.fit), each keeping what
// the one before did and dropping more, until the card fits:
//   - fitNoEdit: no arguments inputs (the edit is offered elsewhere);
//   - fitCompact: a batch's per-call choice is one select per call, its
//     calls' lines and the preview shorter;
//   - fitNoChoices: no per-call choice (the batch is decided whole here,
//     per call on the web page or the API), shorter still;
//   - fitFewCalls: only the first calls listed, then how many more; no
//     preview.
//
// Every level keeps the approve and reject buttons: the card stays
// decidable.
const (
	fitNoEdit = 1 + iota
	fitCompact
	fitNoChoices
	fitFewCalls
)

// feishuFewCalls is how many calls a fitFewCalls card lists.
const feishuFewCalls = 16

// feishuFit renders v with render at the least compaction that keeps
// Feishu's limits (the most compact one if none does).
func feishuFit(v View, render func(View) map[string]any) map[string]any {
	var card map[string]any
	for v.fit = 0; v.fit <= fitFewCalls; v.fit++ {
		card = render(v)
		if FeishuCardFits(card) {
			break
		}
	}
	return card
}

// FeishuCardFits reports whether card keeps Feishu's limits: at most 200
// components, and a message carrying it at most 30 KB.
func FeishuCardFits(card map[string]any) bool {
	content, err := json.Marshal(card)
	if err != nil {
		return false
	}
	body, err := json.Marshal(string(content))
	if err != nil || len(body)+feishuBodyOverhead > feishuMaxBody {
		return false
	}
	body2, _ := card["body"].(map[string]any)
	els, _ := body2["elements"].([]any)
	return countComponents(els) <= feishuMaxComponents
}

// countComponents counts the components of a card body's elements, at
// every depth (a container and what it holds).
func countComponents(els []any) int {
	n := 0
	for _, el := range els {
		m, ok := el.(map[string]any)
		if !ok {
			continue
		}
		n++
		for _, k := range []string{"elements", "columns"} {
			if sub, ok := m[k].([]any); ok {
				n += countComponents(sub)
			}
		}
	}
	return n
}

// feishuPreviewRunes is how much of the preview a card at v's compaction
// shows (0: none).
func feishuPreviewRunes(v View) int {
	switch {
	case v.fit >= fitFewCalls:
		return 0
	case v.fit >= fitNoChoices:
		return 300
	case v.fit >= fitCompact:
		return 1000
	}
	return MaxFeishuPreview
}

// feishuCallLineRunes bounds a batch's call line at v's compaction (0:
// the summary's first line, whole).
func feishuCallLineRunes(v View) int {
	switch {
	case v.fit >= fitNoChoices:
		return 40
	case v.fit >= fitCompact:
		return 80
	}
	return 0
}

// FeishuProcessingCard is the card answered to a click whose decision has
// not ended within the callback window: the pending card with its buttons
// replaced by a "processing" line. The final card follows by a patch.
func FeishuProcessingCard(v View, lang string) map[string]any {
	return feishuFit(v, func(v View) map[string]any { return feishuPending(v, lang, false) })
}

// FeishuOutcomeCard is the card answered to a click once its outcome is
// known. For an outcome that ends the approval it is the final card of
// pending (the view that was shown) with the outcome applied; for an
// attempt that leaves the approval as it was (unauthorized, tampered,
// missing, already_decided) it is nil: the card is left unchanged.
func FeishuOutcomeCard(pending View, o approval.Outcome, text approval.OutcomeText, lang string) map[string]any {
	if !o.Status.Final() {
		return nil
	}
	return FeishuCard(ApplyOutcome(pending, o, text, lang), lang)
}

// FeishuDecidedCard is the card answered to the click whose decision
// ended the approval (the outcome is the clicker's: o.DecidedBy is the
// clicker): FeishuOutcomeCard with comment, what the clicker typed, shown
// as the final card of the record shows it (Final): cleaned as the engine
// cleans a decision's comment before it records it (redact.Clean,
// approval.MaxNoteRunes), on one line, cut to MaxCommentExcerpt. The
// answer replaces the card after the settle's patch, so it must say what
// the patch says. Nil when o does not end the approval.
func FeishuDecidedCard(pending View, o approval.Outcome, text approval.OutcomeText, comment, lang string) map[string]any {
	if !o.Status.Final() {
		return nil
	}
	v := ApplyOutcome(pending, o, text, lang)
	v.Comment = excerpt(oneLine(redact.Clean(comment, approval.MaxNoteRunes)), MaxCommentExcerpt)
	return FeishuCard(v, lang)
}

// ApplyOutcome turns a pending view into the final view of outcome o (what
// Final builds from the approval record, built from the view alone: the
// outcome holds no comment of the decider's, so none is shown).
func ApplyOutcome(v View, o approval.Outcome, text approval.OutcomeText, lang string) View {
	v = finish(v, o, text, lang)
	v.Comment = ""
	return v
}

// FeishuCardJSON is json.Marshal of FeishuCard: the content of an
// interactive message.
func FeishuCardJSON(v View, lang string) (string, error) {
	b, err := json.Marshal(FeishuCard(v, lang))
	if err != nil {
		return "", fmt.Errorf("cards.FeishuCardJSON: %w", err)
	}
	return string(b), nil
}

// FeishuRiskTemplate is the header colour of a pending card: red for HIGH,
// orange for MEDIUM, blue for LOW.
func FeishuRiskTemplate(r approval.Risk) string {
	switch r {
	case approval.RiskHigh:
		return "red"
	case approval.RiskMedium:
		return "orange"
	}
	return "blue"
}

// feishuStatusTemplate is the header colour of a final card.
func feishuStatusTemplate(s approval.Status) string {
	switch s {
	case approval.StatusExecuted, approval.StatusReplayed:
		return "green"
	case approval.StatusFailed, approval.StatusFrozen:
		return "red"
	case approval.StatusRejected:
		return "carmine"
	}
	return "grey"
}

type feishuLabels struct{ processing, confirm, cancel, how, reason, code string }

func feishuWords(lang string) feishuLabels {
	l := words.Of(lang)
	return feishuLabels{processing: words.Text(l, words.CardProcessing), confirm: words.Text(l, words.CardConfirm),
		cancel: words.Text(l, words.CardCancel), how: words.Text(l, words.CardHowFeishu), reason: words.Text(l, words.CardReasonInput),
		code: words.Text(l, words.CardCode)}
}

func plainText(s string) map[string]any { return map[string]any{"tag": "plain_text", "content": s} }

func plainDiv(s string) map[string]any { return map[string]any{"tag": "div", "text": plainText(s)} }

func markdownEl(s string) map[string]any { return map[string]any{"tag": "markdown", "content": s} }

func feishuHeader(title, subtitle, template string) map[string]any {
	h := map[string]any{"title": plainText(title), "template": template}
	if subtitle != "" {
		h["subtitle"] = plainText(subtitle)
	}
	return h
}

func feishuCard(header map[string]any, elements []any) map[string]any {
	return map[string]any{
		"schema": "2.0",
		"config": map[string]any{"update_multi": true},
		"header": header,
		"body":   map[string]any{"elements": elements},
	}
}

// feishuFacts is the summary (or the batch's calls) and the facts of v,
// as plain_text.
func feishuFacts(v View, lang string) []any {
	l := labelsFor(lang)
	var els []any
	if s := strings.TrimSpace(v.Summary); s != "" && len(v.Calls) <= 1 {
		n := MaxFeishuSummary
		if v.fit >= fitNoChoices {
			n = 300
		}
		els = append(els, plainDiv(excerpt(s, n)))
	}
	// The risk and why, what the tool does, who asked and until when,
	// before the details.
	var top strings.Builder
	if v.Reason != "" && !v.Final {
		fmt.Fprintf(&top, "%s: %s\n", l.reason, v.Reason)
	}
	if v.About != "" && !v.Final {
		fmt.Fprintf(&top, "%s: %s\n", l.about, v.About)
	}
	if top.Len() > 0 {
		els = append(els, plainDiv(strings.TrimSuffix(top.String(), "\n")))
	}
	if !v.Final && !v.ExpiresAt.IsZero() {
		els = append(els, feishuRequested(v, lang))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", l.tool, v.Tool)
	if len(v.Calls) > 1 {
		fmt.Fprintf(&b, l.batchOf, len(v.Calls))
		for i, c := range v.Calls {
			if v.fit >= fitFewCalls && i == feishuFewCalls {
				b.WriteString("\n" + words.In(lang, words.CardMoreCalls, len(v.Calls)-i))
				break
			}
			fmt.Fprintf(&b, "\n  %d. %s", i+1, c.Tool)
			if c.Summary != "" {
				line := clip.FirstLine(c.Summary)
				if n := feishuCallLineRunes(v); n > 0 {
					line = excerpt(line, n)
				}
				b.WriteString(": " + line)
			}
		}
	}
	if v.Final {
		fmt.Fprintf(&b, "\n%s: %s", l.requester, v.requesterShown())
		if v.DecidedBy != "" {
			fmt.Fprintf(&b, "\n%s: %s", l.decidedBy, v.DecidedBy)
		}
		if v.Comment != "" {
			fmt.Fprintf(&b, "\n%s: %s", l.comment, v.Comment)
		}
	} else {
		fmt.Fprintf(&b, "\n%s: %s", l.approvers, v.Approvers)
		if v.Escalated != "" {
			b.WriteString("\n" + v.Escalated)
		}
	}
	progress := feishuProgress(v, lang)
	if progress == nil && v.Progress != "" {
		b.WriteString("\n" + v.Progress)
	}
	if v.ShortHash != "" {
		fmt.Fprintf(&b, "\n%s: %s", l.hash, v.ShortHash)
	}
	if v.Code != "" && !v.Final {
		fmt.Fprintf(&b, "\n%s: %s", feishuWords(lang).code, v.Code)
	}
	if d := DeclinedLine(v, lang); d != "" {
		b.WriteString("\n" + d)
	}
	for _, e := range EditedLines(v, lang) {
		b.WriteString("\n" + e)
	}
	els = append(els, plainDiv(b.String()))
	if progress != nil {
		els = append(els, progress)
	}
	if n := feishuPreviewRunes(v); v.Preview != "" && n > 0 {
		els = append(els, markdownEl(fenced(excerpt(v.Preview, n))))
	}
	return els
}

// feishuProgress is a quorum's progress line as a markdown element that
// mentions each voter (<at id=ou_…></at>: the client shows their names),
// when every voter has a Feishu id; nil otherwise (the line is then said
// as text, ids as they are).
func feishuProgress(v View, lang string) map[string]any {
	if v.Progress == "" || len(v.Voters) == 0 {
		return nil
	}
	for _, u := range v.Voters {
		if !feishuUserID.MatchString(string(u)) {
			return nil
		}
	}
	// The catalogue's sentence with one slot per voter (a byte no
	// sentence holds), escaped, then the mentions put in the slots.
	const slot = "\x00"
	slots := make([]string, len(v.Voters))
	for i := range slots {
		slots[i] = slot
	}
	line := escapeMD(words.In(lang, words.QuorumProgress, len(v.Voters), v.Quorum, strings.Join(slots, words.In(lang, words.ApproversSep))))
	for _, u := range v.Voters {
		line = replaceOnce(line, slot, "<at id="+string(u)+"></at>")
	}
	return markdownEl(line)
}

func feishuPending(v View, lang string, buttons bool) map[string]any {
	w := feishuWords(lang)
	els := feishuFacts(v, lang)
	els = append(els, map[string]any{"tag": "hr"})
	if v.WaitsIn != "" {
		// The status card of the requester's chat: the approval waits in
		// the approvers' chat.
		els = append(els, plainDiv(WaitsInLine(v, lang)))
	} else if buttons && v.Answer != nil && v.Reject != nil {
		els = append(els, plainDiv(words.In(lang, words.QuestionHow)), feishuQuestionForm(v, lang))
	} else if buttons && v.Approve != nil && v.Reject != nil {
		how := w.how
		columns := []any{
			feishuButtonColumn(w.confirm, "primary", feishuApproveName, *v.Approve),
			feishuButtonColumn(w.cancel, "danger", feishuRejectName, *v.Reject),
		}
		if v.ApproveOnce != nil {
			// A MEDIUM approval that may grant: two approve buttons.
			l := words.Of(lang)
			how = words.Text(l, words.CardHowGrantFeishu, v.GrantWindow)
			columns = []any{
				feishuButtonColumn(words.Text(l, words.CardApproveOnce), "primary", feishuApproveName, *v.ApproveOnce),
				feishuButtonColumn(words.Text(l, words.CardApproveSession, v.GrantWindow), "default", feishuApproveSessionName, *v.Approve),
				feishuButtonColumn(w.cancel, "danger", feishuRejectName, *v.Reject),
			}
		}
		if v.ApproveAlways != nil {
			// Another agent's standing rule: one more approve button,
			// before the reject button.
			n := len(columns)
			columns = append(columns[:n-1:n-1], feishuButtonColumn(v.Always, "default", feishuApproveAlwaysName, *v.ApproveAlways), columns[n-1])
			how += "\n" + v.AlwaysHow
		}
		els = append(els, plainDiv(how), map[string]any{
			"tag": "form", "name": feishuFormName,
			"elements": append(append(feishuCallChoices(v, lang), feishuEditInputs(v, lang)...),
				map[string]any{
					"tag": "input", "name": FeishuReasonField, "width": "fill",
					"placeholder": plainText(w.reason), "max_length": MaxFeishuReason,
				},
				map[string]any{
					"tag": "column_set", "flex_mode": "none",
					"columns": append(columns, feishuEditColumn(v, lang)...),
				},
			),
		})
	} else {
		els = append(els, plainDiv(w.processing))
	}
	return feishuCard(feishuHeader(v.Title, riskOf(v)+" · "+v.Tool, FeishuRiskTemplate(v.Risk)), els)
}

// feishuButtonColumn is a column holding a button that submits the
// card's form under name, its callback value val.
func feishuButtonColumn(label, kind, name string, val ButtonValue) map[string]any {
	return map[string]any{
		"tag": "column", "width": "auto",
		"elements": []any{map[string]any{
			"tag": "button", "type": kind, "text": plainText(label),
			"name": name, "form_action_type": "submit",
			"behaviors": []any{map[string]any{"type": "callback", "value": feishuValue(val)}},
		}},
	}
}

// feishuValue is a button's callback value: the ButtonValue's fields as
// strings (resolution only on a resolve button, grant only on an approve
// button of a MEDIUM approval that may grant, calls only on a batch's
// buttons).
func feishuValue(val ButtonValue) map[string]any {
	m := map[string]any{
		"kind":           val.Kind,
		"approval_id":    string(val.ApprovalID),
		"decision":       string(val.Decision),
		"payload_sha256": val.PayloadSHA256,
	}
	if val.Resolution != "" {
		m["resolution"] = string(val.Resolution)
	}
	if val.Grant != "" {
		m["grant"] = string(val.Grant)
	}
	if val.Calls > 1 {
		m["calls"] = strconv.Itoa(val.Calls)
	}
	if val.Option > 0 {
		m["option"] = strconv.Itoa(val.Option)
	}
	return m
}

func feishuFinal(v View, lang string) map[string]any {
	l := labelsFor(lang)
	els := feishuFacts(v, lang)
	if v.Result != "" {
		els = append(els, map[string]any{"tag": "hr"}, plainDiv(l.resultOf(v)+":"), markdownEl(fenced(v.Result)))
	}
	if len(v.Resolve) > 0 {
		els = append(els, feishuResolveForm(v, lang)...)
	}
	return feishuCard(feishuHeader(statusMark(v.Status)+" "+statusWords(v), riskOf(v)+" · "+v.Tool, feishuStatusTemplate(v.Status)), els)
}

// feishuResolveForm is the part of a frozen card that resolves it: what the
// buttons do, and a form (its own name, at the card's root) with an
// optional input under FeishuReasonField for the result or a note, and
// the three buttons 已完成 / 重试 / 放弃, each submitting it with its
// resolve value. As on a pending card, only a button submits.
func feishuResolveForm(v View, lang string) []any {
	l := words.Of(lang)
	kinds := map[approval.Resolution]string{approval.ResolveDone: "primary", approval.ResolveRetry: "default", approval.ResolveAbandon: "danger"}
	labels := map[approval.Resolution]words.Key{approval.ResolveDone: words.CardResolveDone, approval.ResolveRetry: words.CardResolveRetry,
		approval.ResolveAbandon: words.CardResolveAbandon}
	var cols []any
	for _, b := range v.Resolve {
		cols = append(cols, feishuButtonColumn(words.Text(l, labels[b.Resolution]), kinds[b.Resolution], feishuResolveName+string(b.Resolution), b))
	}
	return []any{
		map[string]any{"tag": "hr"},
		plainDiv(words.Text(l, words.CardResolveHow)),
		map[string]any{
			"tag": "form", "name": feishuResolveFormName,
			"elements": []any{
				map[string]any{
					"tag": "input", "name": FeishuReasonField, "width": "fill",
					"placeholder": plainText(words.Text(l, words.CardResolveInput)), "max_length": MaxFeishuReason,
				},
				map[string]any{"tag": "column_set", "flex_mode": "none", "columns": cols},
			},
		},
	}
}

// The names of a frozen card's form and the prefix of its buttons' names
// (resolve_done, resolve_retry, resolve_abandon).
const (
	feishuResolveFormName = "resolution"
	feishuResolveName     = "resolve_"
)

// ParseFeishuButtonValue reads the callback value of a card button (the
// object FeishuCard puts in behaviors[].value, as the SDK decodes it: a
// map with string values). It never panics; a value that is not a
// well-formed approval button (wrong kind, missing or non-string fields, a
// decision other than approve / reject / resolve, a resolve without a
// resolution of done / retry / abandon or another button with one, an
// invalid approval id, a hash that is not 64 hex characters) is an error.
func ParseFeishuButtonValue(m map[string]any) (ButtonValue, error) {
	str := func(k string) (string, error) {
		raw, ok := m[k]
		if !ok {
			return "", fmt.Errorf("card value: %s is missing", k)
		}
		s, ok := raw.(string)
		if !ok {
			return "", fmt.Errorf("card value: %s is not a string", k)
		}
		return s, nil
	}
	var v ButtonValue
	kind, err := str("kind")
	if err != nil {
		return v, err
	}
	if kind != "approval" {
		return v, fmt.Errorf("card value: kind %q is not approval", kind)
	}
	id, err := str("approval_id")
	if err != nil {
		return v, err
	}
	if !approval.ID(id).Valid() {
		return v, fmt.Errorf("card value: malformed approval id")
	}
	dec, err := str("decision")
	if err != nil {
		return v, err
	}
	verb := approval.Verb(dec)
	if verb != approval.Approve && verb != approval.Reject && verb != approval.Resolve && verb != EditDecision && verb != AnswerDecision {
		return v, fmt.Errorf("card value: decision %q is not approve, reject, resolve, edit or answer", dec)
	}
	var res approval.Resolution
	if verb == approval.Resolve {
		r, err := str("resolution")
		if err != nil {
			return v, err
		}
		if res, err = approval.ParseResolution(r); err != nil {
			return v, fmt.Errorf("card value: %w", err)
		}
	} else if _, ok := m["resolution"]; ok {
		return v, fmt.Errorf("card value: a resolution on a %s button", dec)
	}
	h, err := str("payload_sha256")
	if err != nil {
		return v, err
	}
	if len(h) != 64 || strings.Trim(strings.ToLower(h), "0123456789abcdef") != "" {
		return v, fmt.Errorf("card value: payload_sha256 is not a sha256 hex digest")
	}
	var grant approval.GrantChoice
	if _, ok := m["grant"]; ok {
		g, err := str("grant")
		if err != nil {
			return v, err
		}
		if grant, err = approval.ParseGrantChoice(g); err != nil || grant == approval.GrantUnset || verb != approval.Approve {
			return v, fmt.Errorf("card value: grant %q is not once, session or always on an approve button", g)
		}
	}
	n, err := parseCallCount(m)
	if err != nil {
		return v, err
	}
	var option int
	if raw, ok := m["option"]; ok {
		s, _ := raw.(string)
		if option, err = optionNumber(s); err != nil || verb != AnswerDecision {
			return v, fmt.Errorf("card value: option %v is not an option's number on an answer button", raw)
		}
	}
	return ButtonValue{Kind: kind, ApprovalID: approval.ID(id), Decision: verb, PayloadSHA256: h, Resolution: res, Grant: grant, Calls: n, Option: option}, nil
}

// ParseFeishuReason reads the reason of a form submit: the string under
// FeishuReasonField in action.form_value (as the SDK decodes it), trimmed.
// It is "" when the click carries no form (an older card, whose buttons
// stand alone), the field is empty, or its value is not a string; such a
// click is still a decision, without a comment. The engine cleans and cuts
// what it gets (approval.Engine.Decide).
func ParseFeishuReason(form map[string]any) string {
	s, _ := form[FeishuReasonField].(string)
	return strings.TrimSpace(s)
}
