package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/words"
)

// PresenterConfig wires a Presenter. Assemble fills it from Parts.Router
// (the same store, scope, language, zone, outcome words and logger) and the
// registry it made.
type PresenterConfig struct {
	// Registry is where the channels are found by name. Required.
	Registry *Registry
	// Store is the engine's store: the Presenter reads an approval again
	// after redrawing its votes (Progress), a session's pending approval
	// for a page that reconnects (PendingView) and the approvals pending
	// in a chat for a card's short code. Required.
	Store approval.Store
	// Scope is how session keys are built (per_chat, per_user,
	// per_thread): a per_thread approval's card goes to its thread.
	// Default per_chat.
	Scope Scope
	// Lang is the language of cards and notices: "zh" or "en". Default "en".
	Lang string
	// Zone is the time zone cards show times in (approval.time_zone).
	// Default UTC.
	Zone *time.Location
	// Text holds the words for each outcome status (approval.outcome_text).
	Text approval.OutcomeText
	// Logger receives operational logs. Default slog.Default().
	Logger *slog.Logger
}

// Presenter is everything that goes out to people: the cards of an
// approval (shown, settled, redrawn with its votes, escalated), privately
// where the approval is private, and what a turn says (streamed, results
// folded, privately for a private turn). It is the engine's
// approval.Notifier and the loop's agent.Speaker, and needs neither: only
// the channel registry, the cards, the words and the store. The Router
// uses it to answer messages and to render the views channels ask for.
type Presenter struct {
	cfg   PresenterConfig
	log   *slog.Logger
	text  approval.OutcomeText
	reg   *Registry
	store approval.Store

	streams openStreams  // streamed messages being written (present_stream.go)
	held    heldResults  // tool results a ResultFolder channel says only when no answer follows (present_results.go)
	private privateTurns // turns of private approvals, whose words go to their requester only (present_privacy.go)
}

// NewPresenter checks cfg and returns a presenter. It does no I/O.
func NewPresenter(cfg PresenterConfig) (*Presenter, error) {
	switch {
	case cfg.Registry == nil:
		return nil, errors.New("channels.NewPresenter: a Registry is required")
	case cfg.Store == nil:
		return nil, errors.New("channels.NewPresenter: a Store (the engine's) is required")
	}
	switch cfg.Scope {
	case "":
		cfg.Scope = ScopePerChat
	case ScopePerChat, ScopePerUser, ScopePerThread:
	default:
		return nil, fmt.Errorf("channels.NewPresenter: unknown session scope %q (want per_chat, per_user or per_thread)", cfg.Scope)
	}
	if cfg.Lang == "" {
		cfg.Lang = string(words.EN)
	}
	l, err := words.Parse(cfg.Lang)
	if err != nil {
		return nil, fmt.Errorf("channels.NewPresenter: %w", err)
	}
	cfg.Lang = string(l)
	if err := cfg.Text.Validate(); err != nil {
		return nil, fmt.Errorf("channels.NewPresenter: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Presenter{cfg: cfg, log: cfg.Logger, text: cfg.Text.With(cfg.Lang), reg: cfg.Registry, store: cfg.Store}, nil
}

// Show sends the card of a new approval through the approval's channel to
// its chat (approval.Notifier). A channel that is not registered is an
// error, so the engine cancels an approval nobody could see.
//
// An approval with an approvers' chat (approve_in) is shown there first,
// with its buttons; if that fails, the error (wrapping
// approval.ErrApproversUnreachable) fails the request and nothing was sent
// to the requester. Then the requester's chat gets the status card
// (cards.Waiting): no buttons, where it waits. A status card that cannot
// be sent is logged and left out: the approval itself is sound. Both
// references are returned, so Settle ends both.
func (p *Presenter) Show(ctx context.Context, a *approval.Approval) ([]approval.CardRef, error) {
	if a.Private() {
		return p.showPrivate(ctx, a) // privacy.go
	}
	own := Target{Channel: a.Channel, ChatID: a.ChatID, ThreadID: p.threadOf(a), UserID: a.Requester}
	if a.ApproveIn == nil {
		ref, err := p.showIn(ctx, a, own, p.pendingCard(ctx, a))
		if err != nil {
			return nil, err
		}
		return []approval.CardRef{ref}, nil
	}
	var refs []approval.CardRef
	if a.ApproveIn.Direct {
		direct, err := p.showDirect(ctx, a)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", approval.ErrApproversUnreachable, err)
		}
		refs = direct
	} else {
		in := Target{Channel: a.ApproveIn.Channel, ChatID: a.ApproveIn.ChatID}
		ref, err := p.showIn(ctx, a, in, p.pendingCard(ctx, a))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", approval.ErrApproversUnreachable, err)
		}
		refs = []approval.CardRef{ref}
	}
	status, err := p.showIn(ctx, a, own, p.statusView(a))
	if err != nil {
		p.log.Warn("the status card could not be sent to the requester's chat; the approval waits in the approvers' chat all the same",
			"channel", a.Channel, "chat_id", a.ChatID, "approval_id", a.ID, "err", err)
		return refs, nil
	}
	return append(refs, status), nil
}

// showIn sends v, a card of a, to to.
func (p *Presenter) showIn(ctx context.Context, a *approval.Approval, to Target, v cards.View) (approval.CardRef, error) {
	ch, err := p.reg.Channel(to.Channel)
	if err != nil {
		return approval.CardRef{}, fmt.Errorf("show approval %s: %w", a.ID, err)
	}
	ref, err := ch.ShowApproval(ctx, to, v)
	if err != nil {
		return approval.CardRef{}, fmt.Errorf("show approval %s on %s: %w", a.ID, to.Channel, err)
	}
	if ref.Channel == "" {
		ref.Channel = to.Channel
	}
	if ref.ChatID == "" {
		ref.ChatID = to.ChatID
	}
	if p.log.Enabled(context.Background(), slog.LevelDebug) { // as Debug asks; its attributes cost allocations on every card
		p.log.Debug("approval shown", "channel", to.Channel, "chat_id", to.ChatID, "approval_id", a.ID, "msg_id", ref.MessageID, "status_card", v.WaitsIn != "")
	}
	return ref, nil
}

// statusView is the status card of a in its requester's chat while it
// waits in its approvers' chat (cards.Waiting).
func (p *Presenter) statusView(a *approval.Approval) cards.View {
	v := cards.Waiting(a, p.text, p.cfg.Lang)
	v.Zone = p.cfg.Zone
	return v
}

// isStatusCard reports whether ref is a's status card: a card of an
// approval with an approvers' chat outside that chat (and outside the
// chats its escalation asked: their cards have buttons).
func isStatusCard(a *approval.Approval, ref approval.CardRef) bool {
	if a.ApproveIn == nil || (ref.Channel == a.ApproveIn.Channel && ref.ChatID == a.ApproveIn.ChatID) {
		return false
	}
	if a.ApproveIn.Direct {
		// The cards went 1:1 to the listed people (never the
		// requester): the status card is the one in the requester's chat.
		return ref.Channel == a.Channel && ref.ChatID == a.ChatID
	}
	return !escalationCard(a, ref)
}

// escalationCard reports whether ref is in the chat of a step of a's
// escalation taken so far.
func escalationCard(a *approval.Approval, ref approval.CardRef) bool {
	for _, st := range a.Taken() {
		if st.To.Channel == ref.Channel && st.To.ChatID == ref.ChatID {
			return true
		}
	}
	return false
}

// finalOn is the final view v as card ref of a shows it: a status card
// offers no resolution of a frozen approval (that is done where the
// approval was decided).
func finalOn(a *approval.Approval, ref approval.CardRef, v cards.View) cards.View {
	if isStatusCard(a, ref) {
		v.Resolve = nil
	}
	return viewOn(a, ref, v)
}

// threadOf recovers the thread of a per_thread session from its key.
func (p *Presenter) threadOf(a *approval.Approval) string {
	if p.cfg.Scope != ScopePerThread {
		return ""
	}
	prefix := a.Channel + ":" + a.ChatID + ":"
	if s := string(a.Session); strings.HasPrefix(s, prefix) {
		return s[len(prefix):]
	}
	return ""
}

// Settle updates every card of the approval to its final state, each
// through the channel that sent it (approval.Notifier). It goes on after
// a failure and reports them all. It resumes no turn: the engine tells the
// loop that a ended (approval.EngineConfig.Ended).
func (p *Presenter) Settle(ctx context.Context, a *approval.Approval, o approval.Outcome) error {
	return errors.Join(p.settleCards(ctx, a, o)...)
}

// settleCards updates every card of a to its final state o, each through
// the channel that sent it and as that card shows it (finalOn), and
// returns what failed; it goes on after a failure.
func (p *Presenter) settleCards(ctx context.Context, a *approval.Approval, o approval.Outcome) []error {
	v := cards.Final(a, o, p.text, p.cfg.Lang)
	v.Zone = p.cfg.Zone
	var errs []error
	for _, ref := range a.Cards {
		ch, err := p.reg.Channel(ref.Channel)
		if err == nil {
			err = ch.SettleApproval(ctx, ref, finalOn(a, ref, v))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("settle card %s/%s of %s: %w", ref.Channel, ref.MessageID, a.ID, err))
			continue
		}
		if p.log.Enabled(context.Background(), slog.LevelDebug) { // as Debug asks; its attributes cost allocations on every card
			p.log.Debug("card settled", "channel", ref.Channel, "chat_id", ref.ChatID, "approval_id", a.ID, "msg_id", ref.MessageID, "status", o.Status)
		}
	}
	return errs
}

// Progress shows a's votes towards its quorum on every card of it whose
// channel can redraw a pending card (ProgressShower; approval.Notifier).
// A Settle may race it: so once the cards are redrawn
// the record is read again, and if the approval has ended by then its
// cards are settled once more, so that none is left pending.
func (p *Presenter) Progress(ctx context.Context, a *approval.Approval) error {
	v := p.pendingView(a) // 1:1 cards (approve_in direct) show no chat's code
	if a.ApproveIn == nil || !a.ApproveIn.Direct {
		v = p.pendingCard(ctx, a)
	}
	status := p.statusView(a)
	// A card in a chat its escalation asked shows the code of that chat.
	inStep := map[approval.Place]cards.View{}
	var errs []error
	redrawn := false
	for _, ref := range a.Cards {
		ch, err := p.reg.Channel(ref.Channel)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ps, ok := ch.(ProgressShower)
		if !ok {
			continue
		}
		shown := v
		place := approval.Place{Channel: ref.Channel, ChatID: ref.ChatID}
		switch {
		case isStatusCard(a, ref):
			shown = status // the votes, still without buttons
		case place != a.DecidesIn() && escalationCard(a, ref):
			if _, ok := inStep[place]; !ok {
				inStep[place] = p.pendingCardIn(ctx, a, place)
			}
			shown = inStep[place]
		}
		shown = viewOn(a, ref, shown)
		if err := ps.ShowProgress(ctx, ref, shown); err != nil {
			errs = append(errs, fmt.Errorf("progress on card %s/%s of %s: %w", ref.Channel, ref.MessageID, a.ID, err))
			continue
		}
		redrawn = true
	}
	if !redrawn {
		return errors.Join(errs...)
	}
	now, err := p.store.Get(ctx, a.ID)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("re-reading %s after its progress: %w", a.ID, err))...)
	}
	if now.State.Terminal() && now.Outcome != nil {
		errs = append(errs, p.settleCards(ctx, now, *now.Outcome)...)
	}
	return errors.Join(errs...)
}

// Say sends what the agent says to the chat the message came from, as a
// reply to it (agent.Speaker). A channel that listens for the turn
// (TurnListener, the HTTP API) hears it instead, as it is: every event of
// the turn (notice, tool_result, awaiting, answer, stream_end,
// turn_ended) but the pieces of a streamed message (delta; the answer
// carries the whole text), and nothing of the turn through Send. A chat
// says nothing for awaiting and turn_ended.
func (p *Presenter) Say(ctx context.Context, in agent.Inbound, s agent.Say) error {
	ch, err := p.reg.Channel(in.Channel)
	if err != nil {
		return err
	}
	to := Target{Channel: in.Channel, ChatID: in.ChatID, ThreadID: in.ThreadID, ReplyTo: in.MessageID, UserID: in.User}
	if said, err := p.sayPrivately(ctx, ch, in, to, s); said {
		return err
	}
	if said, err := p.foldResult(ctx, ch, in, to, s); said {
		return err
	}
	if tl, ok := ch.(TurnListener); ok {
		if s.Kind != agent.SayDelta {
			tl.TurnEvent(ctx, to, TurnEvent{Say: s})
		}
		return nil
	}
	if said, err := p.sayStream(ctx, ch, to, s); said {
		return err
	}
	switch s.Kind {
	case agent.SayAwaiting, agent.SayTurnEnded:
		return nil
	}
	return ch.Send(ctx, to, Outgoing{Kind: outKind(s.Kind), Text: s.Text, Tool: s.Tool, Args: s.Args, IsError: s.IsError})
}

// outKind maps what the agent says to what a channel sends; anything the
// agent adds later is a notice until it is mapped here.
func outKind(k agent.SayKind) OutKind {
	switch k {
	case agent.SayAnswer:
		return OutAnswer
	case agent.SayToolResult:
		return OutToolResult
	}
	return OutNotice
}

// Views are the cards of pending approvals a channel shows again by
// itself: a page that reconnects (web), a chat that starts while one
// waits (cli), a click on a card another replica sent (feishu). The
// Presenter makes them; cmd/bot gives it (channels.Assembly.Presenter) to
// those channels in their configs when it builds them, after Assemble.
type Views interface {
	// PendingView returns the card of the pending approval of the session
	// that to names (Channel, ChatID, UserID, ThreadID), or nil if none.
	PendingView(ctx context.Context, to Target) (*cards.View, error)
	// ApprovalView returns the pending card of approval id when the
	// message messageID of channel is one of the cards that show it, or
	// nil when the approval is missing, no longer pending, or not shown by
	// that message.
	ApprovalView(ctx context.Context, channel string, id approval.ID, messageID string) (*cards.View, error)
}

var _ Views = (*Presenter)(nil)

// PendingView returns the card of the pending approval of to's session,
// or nil (Views).
func (p *Presenter) PendingView(ctx context.Context, to Target) (*cards.View, error) {
	a, err := p.store.Pending(ctx, SessionKey(p.cfg.Scope, to.Channel, to.ChatID, to.UserID, to.ThreadID))
	if err != nil || a == nil {
		return nil, err
	}
	if a.ApproveIn != nil {
		// It waits in the approvers' chat: the requester sees its status.
		v := viewFor(a, to.UserID, p.statusView(a))
		return &v, nil
	}
	v := viewFor(a, to.UserID, p.pendingCard(ctx, a))
	return &v, nil
}

// ApprovalView returns the card of approval id while it is pending, if
// messageID of channel shows it (Views).
func (p *Presenter) ApprovalView(ctx context.Context, channel string, id approval.ID, messageID string) (*cards.View, error) {
	if !id.Valid() || messageID == "" {
		return nil, nil
	}
	a, err := p.store.Get(ctx, id)
	if err != nil {
		if approval.KindOf(err) == errkind.NotFound {
			return nil, nil
		}
		return nil, err
	}
	i := slices.IndexFunc(a.Cards, func(c approval.CardRef) bool { return c.Channel == channel && c.MessageID == messageID })
	if a.State != approval.StatePending || i < 0 {
		return nil, nil
	}
	if isStatusCard(a, a.Cards[i]) {
		v := viewOn(a, a.Cards[i], p.statusView(a))
		return &v, nil
	}
	v := viewOn(a, a.Cards[i], p.pendingCard(ctx, a))
	return &v, nil
}

// waitingNotice tells the sender that an approval waits and how to answer.
func (p *Presenter) waitingNotice(a *approval.Approval) string {
	what := clip.Runes(clip.FirstLine(a.Summary), 120) // the agent's summary names the tool: "erase: …"
	if a.Private() {
		return fmt.Sprintf(routerWordsIn(p.cfg.Lang).waiting, p.redactedLine(a))
	}
	if what == "" || len(a.Calls) > 1 {
		what = fmt.Sprintf(routerWordsIn(p.cfg.Lang).calls, a.Tool(), len(a.Calls))
	}
	return fmt.Sprintf(routerWordsIn(p.cfg.Lang).waiting, what)
}

// pendingCard is the pending view of a, with its short code in its chat
// (approval.Codes over the approvals pending there, a among them) when
// the store answers; a card without a code is still a card (a failure is
// logged).
func (p *Presenter) pendingCard(ctx context.Context, a *approval.Approval) cards.View {
	v := p.pendingView(a)
	code, err := p.chatCode(ctx, a) // in the approvers' chat, when it has one
	if err != nil {
		p.log.Warn("finding the approval's code in its chat failed; the card has no code", "approval_id", a.ID, "err", err)
		return v
	}
	v.Code = code
	return v
}

// chatCode is a's short code in the chat where it is decided (its
// approvers' chat when it has one), as approval.Engine.ChatCode finds it:
// through the store's ChatCoder where it has one, else from ChatPending.
func (p *Presenter) chatCode(ctx context.Context, a *approval.Approval) (string, error) {
	if cc, ok := p.store.(approval.ChatCoder); ok {
		return cc.ChatCode(ctx, a)
	}
	place := a.DecidesIn()
	waiting, err := p.store.ChatPending(ctx, place.Channel, place.ChatID)
	if err != nil {
		return "", err
	}
	return approval.CodeIn(waiting, a), nil
}

// pendingView is the card of a waiting approval as the presenter shows
// it: in its language, times in its zone (PresenterConfig.Zone).
func (p *Presenter) pendingView(a *approval.Approval) cards.View {
	v := cards.Pending(a, p.text, p.cfg.Lang)
	v.Zone = p.cfg.Zone
	return v
}
