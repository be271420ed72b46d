package approval

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
)

// The actions of an elicitation's answer (MCP ElicitResult.action).
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitAnswer is how an elicitation ended: accepted with the typed
// content, declined (a person said no: 取消, Decline) or cancelled
// (expired, withdrawn, superseded, the call ended, the bot stopped).
type ElicitAnswer struct {
	// Action is ElicitAccept, ElicitDecline or ElicitCancel.
	Action string
	// Content is an accepted answer's typed values, by field name.
	Content map[string]any
	// ID is the question's approval ("" when none was asked).
	ID ID
}

// ErrNoOrigin is the cause of an elicitation with no turn behind it: no
// chat to ask in.
var ErrNoOrigin = errors.New("no turn behind the call: nobody to ask")

// elicitMargin is what an elicitation leaves of its call's time for the
// answer to reach the server: a tenth of what is left, at most this.
const elicitMargin = 5 * time.Second

// Elicit asks the people of the turn ctx's call runs for (OriginOf) an MCP
// server's form elicitation as a question (elicit.go) in the turn's chat,
// by the call's approver rule (one person's answer: no quorum), and
// waits for the answer, never past ctx: its approval expires before ctx's
// deadline (less a margin), and ends cancelled when ctx ends first.
// message and schema are the server's, untrusted.
//
// It fails closed: no origin in ctx (ErrNoOrigin), a schema hitlbot
// cannot ask (ErrElicitSchema) or a question that could not be asked is
// a decline with the error saying why (for the caller to log); never an
// accept. After EndElicitations (shutdown) it is a cancel.
func (e *Engine) Elicit(ctx context.Context, server, message string, schema any) (ElicitAnswer, error) {
	o, ok := OriginOf(ctx)
	if !ok {
		return ElicitAnswer{Action: ElicitDecline}, ErrNoOrigin
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !e.asks(&cancel) {
		return ElicitAnswer{Action: ElicitCancel}, errors.New("the bot is shutting down")
	}
	defer e.asked(&cancel)
	args, err := ElicitArgs(message, schema)
	if err != nil {
		return ElicitAnswer{Action: ElicitDecline}, err
	}
	timeout := DefaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		// A context's deadline is on the wall clock, whatever the
		// engine's clock says.
		left := time.Until(dl)
		left -= min(left/10, elicitMargin)
		if left < time.Second {
			return ElicitAnswer{Action: ElicitCancel}, fmt.Errorf("the call has %s left: too little to ask anyone", left.Round(time.Millisecond))
		}
		timeout = min(timeout, left)
	}
	rule := o.Approvers
	rule.Quorum = 0 // an answer is one person's
	risk := o.Risk
	if risk < RiskMedium {
		risk = RiskMedium
	}
	say := func(lang string) (summary, preview string) {
		msg := redact.Clean(message, maxElicitMessage)
		return words.In(lang, words.ElicitAsks, server, clipRunes(firstLine(msg), 120)), ElicitPreview(lang, args)
	}
	summary, preview := say("en")
	summaryZH, previewZH := say("zh")
	key := ""
	if o.Turn != "" {
		// In the turn's name, as the turn's own approvals are; unique, so
		// that no cached result of another answers it.
		key = o.Turn + "/elicit:" + rand.Text()
	}
	a, err := e.Request(ctx, Request{Session: o.Session, Channel: o.Channel, ChatID: o.ChatID, Requester: o.Requester,
		RequesterName: o.RequesterName, Group: o.Group, IdempotencyKey: key,
		Calls: []Call{{Tool: ElicitTool(server), Args: args, Summary: summary, SummaryZH: summaryZH}},
		Verdict: Verdict{NeedsApproval: true, Risk: risk, Approvers: rule, ApproveIn: o.ApproveIn, Timeout: timeout, Privacy: o.Privacy,
			Reason: "an MCP server asks", ReasonZH: "MCP 服务提问"},
		Summary: summary, Preview: preview, SummaryZH: summaryZH, PreviewZH: previewZH,
		About: Say(words.ElicitAbout, server)})
	if err != nil {
		return ElicitAnswer{Action: ElicitDecline}, err
	}
	out, err := e.Wait(ctx, a.ID)
	if err != nil {
		// The call ended (its timeout, the bot stopping) before anyone
		// answered: the question is withdrawn, and its cards say so.
		if _, cerr := e.Cancel(context.WithoutCancel(ctx), a.ID, "", SourceSystem, "the tool call ended before an answer"); cerr != nil {
			e.log.Warn("withdrawing an elicitation whose call ended failed", "approval_id", a.ID, "err", cerr)
		}
		return ElicitAnswer{Action: ElicitCancel, ID: a.ID}, nil
	}
	switch out.Status {
	case StatusExecuted, StatusReplayed:
	case StatusRejected:
		return ElicitAnswer{Action: ElicitDecline, ID: a.ID}, nil
	default:
		return ElicitAnswer{Action: ElicitCancel, ID: a.ID}, nil
	}
	got, err := e.Get(context.WithoutCancel(ctx), a.ID)
	if err != nil {
		return ElicitAnswer{Action: ElicitCancel, ID: a.ID}, err
	}
	content, err := ElicitContent(got.Calls[0].Args)
	if err != nil {
		// Checked when the answer was taken: a record that no longer
		// reads is no answer.
		return ElicitAnswer{Action: ElicitCancel, ID: a.ID}, err
	}
	// As JSON carries it (numbers as float64): what the SDK checks
	// against the schema.
	b, err := json.Marshal(content)
	if err != nil {
		return ElicitAnswer{Action: ElicitCancel, ID: a.ID}, err
	}
	content = nil
	if err := json.Unmarshal(b, &content); err != nil {
		return ElicitAnswer{Action: ElicitCancel, ID: a.ID}, err
	}
	return ElicitAnswer{Action: ElicitAccept, Content: content, ID: a.ID}, nil
}

// asks records an elicitation's cancel, for EndElicitations; false once
// that ran.
func (e *Engine) asks(cancel *context.CancelFunc) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.noAsking {
		return false
	}
	if e.asking == nil {
		e.asking = map[*context.CancelFunc]struct{}{}
	}
	e.asking[cancel] = struct{}{}
	return true
}

// asked forgets an elicitation that ended.
func (e *Engine) asked(cancel *context.CancelFunc) {
	e.mu.Lock()
	delete(e.asking, cancel)
	e.mu.Unlock()
}

// EndElicitations ends every elicitation this engine asks, as cancelled
// (their questions withdrawn), and refuses later ones: at shutdown, before
// the channels close (nobody could answer them any more, and the
// decisions whose tool calls wait on them would keep the channels from
// closing).
func (e *Engine) EndElicitations() {
	e.mu.Lock()
	e.noAsking = true
	cancels := make([]context.CancelFunc, 0, len(e.asking))
	for c := range e.asking {
		cancels = append(cancels, *c)
	}
	e.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ElicitPreview is the preview of an elicitation's question input args
// (ElicitArgs) in lang: the server's message, then each question
// numbered with its field's name, its options numbered, and its default
// (which an empty answer takes).
func ElicitPreview(lang string, args json.RawMessage) string {
	var in struct {
		Elicitation struct {
			Message string `json:"message"`
		} `json:"elicitation"`
	}
	_ = json.Unmarshal(args, &in)
	qs, _ := ParseQuestions(args)
	defaults := QuestionDefaults(args)
	var b strings.Builder
	b.WriteString(in.Elicitation.Message)
	for i, q := range qs {
		b.WriteString("\n\n" + strconv.Itoa(i+1) + ". [" + q.Header + "] " + q.Question)
		if i < len(defaults) && defaults[i] != "" {
			b.WriteString(words.In(lang, words.ElicitDefault, defaults[i]))
		}
		for j, op := range q.Options {
			b.WriteString("\n   " + strconv.Itoa(j+1) + ". " + op.Label)
		}
	}
	return b.String()
}
