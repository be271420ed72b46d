// Package cards turns an approval into what people see: a platform-neutral
// View, and renderers for each surface (web JSON, Markdown / plain text;
// Feishu card JSON 2.0 and DingTalk card data live beside them). Channels
// render; the agent never does.
package cards

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// ButtonValue is the value a card button carries back on a click: ids
// only, never the payload itself.
type ButtonValue struct {
	Kind          string        `json:"kind"` // always "approval"
	ApprovalID    approval.ID   `json:"approval_id"`
	Decision      approval.Verb `json:"decision"` // approve | reject | resolve
	PayloadSHA256 string        `json:"payload_sha256"`
	// Resolution is a resolve button's choice (done, retry, abandon); empty
	// for approve and reject.
	Resolution approval.Resolution `json:"resolution,omitempty"`
	// Grant is the grant choice of an approve button of a MEDIUM approval
	// that may grant a window: once, or session; absent on other buttons.
	Grant approval.GrantChoice `json:"grant,omitempty"`
	// Calls is the number of calls of a batch (absent for one call): a
	// card whose form offers a choice per call says so, and the click's
	// choices are read for that many calls (ParseFeishuCalls).
	Calls int `json:"calls,omitempty"`
	// Option is the option's number (1-based) of an option button of a
	// question card (decision AnswerDecision); absent on other buttons.
	Option int `json:"option,omitempty"`
}

// CallView is one tool call as shown on a card.
type CallView struct {
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Summary string          `json:"summary,omitempty"`
	// CallID names a batch's call in a per-call decision
	// (approval.CallKey): the model's call id, or "#<n>"; absent for a
	// view of one call.
	CallID string `json:"call_id,omitempty"`
	// Status is what became of a batch's call, on a final view whose
	// outcome has a result per call (a per-call decision's declined calls say
	// rejected).
	Status approval.Status `json:"status,omitempty"`
	// Edited says what an approver changed before approving the call
	// (approval.Call.Edited), once they have.
	Edited string `json:"edited,omitempty"`
}

// View is an approval as people see it, in its pending or final state.
type View struct {
	ApprovalID approval.ID   `json:"approval_id"`
	Title      string        `json:"title"`
	Risk       approval.Risk `json:"risk"`
	Tool       string        `json:"tool"`
	Calls      []CallView    `json:"calls"`
	Summary    string        `json:"summary"`
	Preview    string        `json:"preview,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	// About says what the call does, for its approver (not the model's
	// tool description); RiskText is the risk in words ("高风险").
	About     string          `json:"about,omitempty"`
	RiskText  string          `json:"risk_text,omitempty"`
	Requester approval.UserID `json:"requester"`
	// RequesterName is the requester's name as their platform gave it
	// (DingTalk's senderNick); empty, the id is shown (a Feishu card
	// mentions the id, and the client shows the name).
	RequesterName string `json:"requester_name,omitempty"`
	// CreatedAt is when the approval was asked for.
	CreatedAt time.Time `json:"created_at"`
	// Zone is the time zone the card shows times in (approval.time_zone;
	// nil: UTC). The web JSON carries times in UTC and the page shows
	// them in its reader's zone.
	Zone          *time.Location `json:"-"`
	Approvers     string         `json:"approvers"` // who may approve, in words
	ExpiresAt     time.Time      `json:"expires_at"`
	PayloadSHA256 string         `json:"payload_sha256"`
	ShortHash     string         `json:"short_hash"`
	// Final is false while the approval waits; then Status, StatusText,
	// DecidedBy, Comment and Result describe how it ended, and there are
	// no buttons. StatusText is the status sentence, said once; Result is
	// only what follows it: the tool's result, or why the approval failed
	// or froze ("timed out after 2m0s"), never the sentence again.
	Final      bool            `json:"final"`
	Status     approval.Status `json:"status,omitempty"`
	StatusText string          `json:"status_text,omitempty"`
	DecidedBy  approval.UserID `json:"decided_by,omitempty"`
	Comment    string          `json:"comment,omitempty"` // what the decider wrote, on one line
	Result     string          `json:"result,omitempty"`  // an excerpt of the tool's result, or the cause
	// Buttons are the approve and reject values while pending.
	Approve *ButtonValue `json:"approve,omitempty"`
	Reject  *ButtonValue `json:"reject,omitempty"`
	// Resolve are the three buttons of a frozen approval (its effect
	// unknown), in the order of approval.Resolutions: 已完成, 重试, 放弃.
	// Empty on every other view.
	Resolve []ButtonValue `json:"resolve,omitempty"`
	// Resolution is how a person resolved the frozen approval this final
	// view shows (done, retry, abandon); empty otherwise.
	Resolution approval.Resolution `json:"resolution,omitempty"`
	// ApproveOnce, for a MEDIUM approval that may grant a window, is the
	// second approve button (仅本次: grant once); Approve is then the
	// session one (本会话允许, grant session) and GrantWindow the window
	// in words ("5m").
	ApproveOnce *ButtonValue `json:"approve_once,omitempty"`
	GrantWindow string       `json:"grant_window,omitempty"`
	// ApproveAlways, for another agent's approval that offers a standing
	// rule (approval.Approval.Standing), is one more approve button
	// (grant always); Always is its label in the card's language
	// ("Always allow Bash(npm test:*) for ci-claude"), AlwaysHow how to
	// answer it.
	ApproveAlways *ButtonValue `json:"approve_always,omitempty"`
	Always        string       `json:"always,omitempty"`
	AlwaysHow     string       `json:"always_how,omitempty"`
	// AlwaysRule and AlwaysAgent are the standing rule in Claude Code's
	// words (Bash(npm test:*)) and its agent, for a surface that words
	// the choice itself (bot chat's prompt).
	AlwaysRule  string `json:"-"`
	AlwaysAgent string `json:"-"`
	// Quorum is how many people must approve (absent when one does);
	// Progress says the votes so far ("1/2 已批准：u1"), once there are
	// any, on a pending view and on the final one.
	Quorum   int    `json:"quorum,omitempty"`
	Progress string `json:"progress,omitempty"`
	// Voters are who approved towards the quorum, in order (Progress
	// names them; a Feishu card mentions them).
	Voters []approval.UserID `json:"voters,omitempty"`
	// Code is the approval's short code in its chat (approval.Codes), for
	// 确认 <code> and /cancel <code>; set by the router when it shows the
	// card, empty where no code is known.
	Code string `json:"code,omitempty"`
	// WaitsIn, on the status card of the requester's chat of an approval
	// decided in an approvers' chat (approve_in; see Waiting), says where
	// it waits ("the approvers' chat"): the card has no buttons and says
	// so in one line instead of how to answer. Empty on every other view.
	WaitsIn string `json:"waits_in,omitempty"`
	// Escalated, once a step of the approval's timed escalation has been
	// taken, says so while it waits: how long nobody decided, which
	// chats were asked too, who may decide too
	// (approval.Approval.EscalatedIn). Empty before, and on a final view.
	Escalated string `json:"escalated,omitempty"`
	// Step, on the card a step of the approval's escalation sends to its
	// chat, is that step's number (1 for the first); 0 on every other
	// card. A platform that names a card by its approval (DingTalk's
	// outTrackId) tells the cards apart by it.
	Step int `json:"-"`
	// Questions are the questions of another agent's AskUserQuestion
	// (question.go); Answer is its pending view's answer button value.
	// Empty on every other view.
	Questions []QuestionView `json:"questions,omitempty"`
	Answer    *ButtonValue   `json:"answer,omitempty"`
	// Redacted marks the onlookers' view of a private approval (Redact):
	// every renderer shows one line (RedactedLine), no button.
	Redacted bool `json:"redacted,omitempty"`

	// fit is how far a Feishu card of this view was compacted to keep
	// Feishu's limits (feishuFit); 0 is the full card.
	fit int
}

// MaxResultExcerpt bounds the result shown on a final card, in runes.
const MaxResultExcerpt = 600

// MaxCommentExcerpt bounds the decider's comment shown on a final card, in
// runes.
const MaxCommentExcerpt = 300

// Pending builds the view of a waiting approval.
func Pending(a *approval.Approval, text approval.OutcomeText, lang string) View {
	v := base(a, lang)
	v.Approve = &ButtonValue{Kind: "approval", ApprovalID: a.ID, Decision: approval.Approve, PayloadSHA256: a.PayloadSHA256}
	v.Reject = &ButtonValue{Kind: "approval", ApprovalID: a.ID, Decision: approval.Reject, PayloadSHA256: a.PayloadSHA256}
	if a.Grantable() {
		v.Approve.Grant = approval.GrantSession
		once := *v.Approve
		once.Grant = approval.GrantOnce
		v.ApproveOnce, v.GrantWindow = &once, approval.ShortDuration(a.GrantWindow)
	}
	if v.Questions != nil {
		// A question is answered, never approved as it is: no approve
		// button but Answer; 取消 declines it.
		answer := *v.Approve
		answer.Decision = AnswerDecision
		v.Answer, v.Approve, v.ApproveOnce, v.GrantWindow = &answer, nil, nil, ""
		return v
	}
	if st := a.Standing; st != nil && len(a.Calls) == 1 {
		always := *v.Approve
		always.Grant = approval.GrantAlways
		v.ApproveAlways, v.AlwaysRule, v.AlwaysAgent = &always, st.Words(), st.Agent
		v.Always = words.In(lang, words.CardApproveAlways, st.Words(), st.Agent)
		v.AlwaysHow = words.In(lang, words.CardHowAlways, st.Words(), st.Agent)
	}
	if len(a.Calls) > 1 {
		v.Approve.Calls, v.Reject.Calls = len(a.Calls), len(a.Calls)
		if v.ApproveOnce != nil {
			v.ApproveOnce.Calls = len(a.Calls)
		}
	}
	return v
}

// Waiting builds the status card of a waiting approval for its
// requester's chat when it is decided in an approvers' chat (approve_in):
// the pending view without buttons or short code, who may approve said
// from outside that chat, and WaitsIn naming where it waits.
func Waiting(a *approval.Approval, text approval.OutcomeText, lang string) View {
	v := base(a, lang)
	v.Approvers = a.Approvers.DescribeElsewhereIn(lang)
	v.WaitsIn = words.In(lang, words.ApproveInChat)
	if a.ApproveIn != nil && a.ApproveIn.Direct {
		v.WaitsIn = words.In(lang, words.ApproveInDirect)
	}
	return v
}

// WaitsInLine is the one line a status card (View.WaitsIn) shows
// instead of how to answer: "Waiting for approval in the approvers'
// chat".
func WaitsInLine(v View, lang string) string {
	return words.In(lang, words.CardWaitsIn, v.WaitsIn)
}

// Final builds the view of an ended approval (or of the status a decision
// attempt got, for already_decided and the like).
func Final(a *approval.Approval, o approval.Outcome, text approval.OutcomeText, lang string) View {
	v := finish(base(a, lang), o, text, lang)
	if agent, ok := agentOf(a); ok && v.Questions == nil && (o.Status == approval.StatusExecuted || o.Status == approval.StatusReplayed) {
		// Another agent's call: allowed, not run here (package gate).
		v.StatusText, v.Result = words.In(lang, words.GateAllowed, agent), ""
	}
	if v.DecidedBy == "" {
		v.DecidedBy = a.DecidedBy
	}
	v.Comment = excerpt(oneLine(a.Comment), MaxCommentExcerpt)
	return v
}

// agentOf returns the agent of an approval of another agent's call: its
// one call is named "<agent>/<tool>", a slash no tool of hitlbot's own
// has.
func agentOf(a *approval.Approval) (string, bool) {
	if len(a.Calls) != 1 {
		return "", false
	}
	agent, _, ok := strings.Cut(a.Calls[0].Tool, "/")
	return agent, ok
}

// finish makes v the final view of outcome o: the status sentence in
// StatusText, and in Result only what the outcome says beyond it (see
// Detail), for the outcomes whose tools were dispatched.
func finish(v View, o approval.Outcome, text approval.OutcomeText, lang string) View {
	v.Final = true
	v.Status = o.Status
	v.StatusText = text.TextIn(lang, o.Status)
	v.DecidedBy = o.DecidedBy
	v.Result = ""
	switch o.Status {
	case approval.StatusExecuted, approval.StatusReplayed, approval.StatusFailed, approval.StatusFrozen:
		v.Result = excerpt(Detail(o), MaxResultExcerpt)
	}
	v.Approve, v.Reject, v.Answer = nil, nil, nil
	v.Resolve, v.Resolution = nil, o.Resolution
	if o.Status == approval.StatusFrozen {
		v.Resolve = resolveButtons(v)
	}
	if agent, _, _ := strings.Cut(v.Tool, "/"); v.Questions != nil && (o.Status == approval.StatusExecuted || o.Status == approval.StatusReplayed) {
		// An agent's question answered: the answers are the result.
		v.StatusText = words.In(lang, words.QuestionAnswered, agent)
	}
	switch o.Resolution {
	case approval.ResolveDone:
		// The resolver's note is the card's comment line; nothing ran.
		v.StatusText, v.Result = words.In(lang, words.ResolvedDone), ""
	case approval.ResolveAbandon:
		v.StatusText = words.In(lang, words.ResolvedAbandon)
	case approval.ResolveRetry:
		v.StatusText = words.In(lang, words.ResolvedRetry, v.StatusText)
	}
	if v.Redacted {
		// Onlookers learn how it ended and who decided, nothing else.
		v.Result, v.Resolve, v.Calls = "", nil, nil
		return v
	}
	if len(o.Results) == len(v.Calls) {
		// Each call's own end: a batch's statuses, and what an approver
		// changed before approving (so a card built from the pending view,
		// the answer to the click, says it as the record's does).
		calls := make([]CallView, len(v.Calls))
		for i, c := range v.Calls {
			if len(v.Calls) > 1 {
				c.Status = o.Results[i].Status
			}
			if e := o.Results[i].Edited; e != "" && v.Questions == nil {
				c.Edited = e
			}
			calls[i] = c
		}
		v.Calls = calls
	}
	return v
}

// resolveButtons are the three buttons of a frozen view: one value per
// resolution, bound to the approval and its payload hash.
func resolveButtons(v View) []ButtonValue {
	bs := make([]ButtonValue, len(approval.Resolutions))
	for i, r := range approval.Resolutions {
		bs[i] = ButtonValue{Kind: "approval", ApprovalID: v.ApprovalID, Decision: approval.Resolve, PayloadSHA256: v.PayloadSHA256, Resolution: r}
	}
	return bs
}

// Detail is what outcome o says beyond its status sentence, which a card
// says once, as its status: the tools' own result for an executed or
// replayed outcome, else the engine's Outcome.Detail (a failed call's
// error, why a call froze: "timed out after 2m0s"), whatever the language
// of the sentence.
func Detail(o approval.Outcome) string {
	if o.Status == approval.StatusExecuted || o.Status == approval.StatusReplayed {
		return o.Content
	}
	return o.Detail
}

func base(a *approval.Approval, lang string) View {
	v := View{
		ApprovalID:    a.ID,
		Title:         words.In(lang, words.CardTitle),
		Risk:          a.Risk,
		Tool:          a.Tool(),
		Summary:       a.SummaryIn(lang),
		Preview:       a.PreviewIn(lang),
		Reason:        a.ReasonIn(lang),
		About:         a.AboutIn(lang),
		RiskText:      riskWords(a.Risk, lang),
		Requester:     a.Requester,
		RequesterName: a.RequesterName,
		CreatedAt:     a.CreatedAt,
		Approvers:     a.Approvers.DescribeIn(lang),
		ExpiresAt:     a.ExpiresAt,
		PayloadSHA256: a.PayloadSHA256,
		ShortHash:     approval.ShortHash(a.PayloadSHA256),
	}
	if a.State == approval.StatePending || a.State == "" {
		v.Escalated = a.EscalatedIn(lang)
	}
	if n := a.Approvers.Needed(); n > 1 {
		v.Quorum = n
		if len(a.Votes) > 0 {
			v.Progress = approval.QuorumProgressIn(a, lang)
			for _, vote := range a.Votes {
				v.Voters = append(v.Voters, vote.By)
			}
		}
	}
	if v.Reason == v.RiskText {
		v.Reason = "" // a reason that only says the risk ("中风险") is not said twice
	}
	if v.Questions = questionsOf(a, lang); v.Questions != nil {
		v.Title = words.In(lang, words.QuestionTitle)
	}
	for i, c := range a.Calls {
		cv := CallView{Tool: c.Tool, Args: c.Args, Summary: c.SummaryIn(lang), Edited: c.Edited}
		if v.Questions != nil {
			cv.Edited = "" // the answers are the card's result
		}
		if len(a.Calls) > 1 {
			cv.CallID = approval.CallKey(a.Calls, i)
		}
		v.Calls = append(v.Calls, cv)
	}
	return v
}

// riskWords is risk r in words in lang ("HIGH risk", "高风险").
func riskWords(r approval.Risk, lang string) string {
	switch r {
	case approval.RiskHigh:
		return words.In(lang, words.CardRiskHigh)
	case approval.RiskMedium:
		return words.In(lang, words.CardRiskMedium)
	}
	return words.In(lang, words.CardRiskLow)
}

// oneLine folds line breaks into spaces: text from a person (a comment)
// cannot fake further lines of a card.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func excerpt(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
