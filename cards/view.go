// Package cards turns an approval into what people see: a platform-neutral
// View, and renderers for each surface (web JSON, Markdown / plain text;
// Feishu card JSON 2.0 and DingTalk card data live beside them). Channels
// render; the agent never does.
package cards

import (
	"encoding/json"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// ButtonValue is the value a card button carries back on a click: ids
// only, never the payload itself.
type ButtonValue struct {
	Kind          string        `json:"kind"` // always "approval"
	ApprovalID    approval.ID   `json:"approval_id"`
	Decision      approval.Verb `json:"decision"` // approve | reject
	PayloadSHA256 string        `json:"payload_sha256"`
}

// CallView is one tool call as shown on a card.
type CallView struct {
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Summary string          `json:"summary,omitempty"`
}

// View is an approval as people see it, in its pending or final state.
type View struct {
	ApprovalID    approval.ID     `json:"approval_id"`
	Title         string          `json:"title"`
	Risk          approval.Risk   `json:"risk"`
	Tool          string          `json:"tool"`
	Calls         []CallView      `json:"calls"`
	Summary       string          `json:"summary"`
	Preview       string          `json:"preview,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Requester     approval.UserID `json:"requester"`
	Approvers     string          `json:"approvers"` // who may approve, in words
	ExpiresAt     time.Time       `json:"expires_at"`
	PayloadSHA256 string          `json:"payload_sha256"`
	ShortHash     string          `json:"short_hash"`
	// Final is false while the approval waits; then Status, StatusText,
	// DecidedBy and Result describe how it ended, and there are no buttons.
	Final      bool            `json:"final"`
	Status     approval.Status `json:"status,omitempty"`
	StatusText string          `json:"status_text,omitempty"`
	DecidedBy  approval.UserID `json:"decided_by,omitempty"`
	Result     string          `json:"result,omitempty"` // an excerpt of the tool's result
	// Buttons are the approve and reject values while pending.
	Approve *ButtonValue `json:"approve,omitempty"`
	Reject  *ButtonValue `json:"reject,omitempty"`
}

// MaxResultExcerpt bounds the result shown on a final card, in runes.
const MaxResultExcerpt = 600

// Pending builds the view of a waiting approval.
func Pending(a *approval.Approval, text approval.OutcomeText, lang string) View {
	v := base(a, lang)
	v.Approve = &ButtonValue{Kind: "approval", ApprovalID: a.ID, Decision: approval.Approve, PayloadSHA256: a.PayloadSHA256}
	v.Reject = &ButtonValue{Kind: "approval", ApprovalID: a.ID, Decision: approval.Reject, PayloadSHA256: a.PayloadSHA256}
	return v
}

// Final builds the view of an ended approval (or of the status a decision
// attempt got, for already_decided and the like).
func Final(a *approval.Approval, o approval.Outcome, text approval.OutcomeText, lang string) View {
	v := base(a, lang)
	v.Final = true
	v.Status = o.Status
	v.StatusText = text.Text(o.Status)
	v.DecidedBy = o.DecidedBy
	if v.DecidedBy == "" {
		v.DecidedBy = a.DecidedBy
	}
	if o.Status == approval.StatusExecuted || o.Status == approval.StatusReplayed || o.Status == approval.StatusFailed || o.Status == approval.StatusFrozen {
		v.Result = excerpt(o.Content, MaxResultExcerpt)
	}
	return v
}

func base(a *approval.Approval, lang string) View {
	title := "Approval needed"
	if lang == "zh" {
		title = "需要确认"
	}
	v := View{
		ApprovalID:    a.ID,
		Title:         title,
		Risk:          a.Risk,
		Tool:          a.Tool(),
		Summary:       a.Summary,
		Preview:       a.Preview,
		Reason:        a.ReasonIn(lang),
		Requester:     a.Requester,
		Approvers:     a.Approvers.Describe(),
		ExpiresAt:     a.ExpiresAt,
		PayloadSHA256: a.PayloadSHA256,
		ShortHash:     approval.ShortHash(a.PayloadSHA256),
	}
	for _, c := range a.Calls {
		v.Calls = append(v.Calls, CallView{Tool: c.Tool, Args: c.Args, Summary: c.Summary})
	}
	return v
}

func excerpt(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
