package channels

// Privacy in groups (issue 17): an approval whose policy says privacy
// group, asked in a group chat, is shown whole only to the people who may
// see it (approval.Approval.MaySee: its requester and the people its rule
// lets approve); the chat sees its redacted card (cards.Redact), and the
// turn that ran or was refused its calls answers its requester privately.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/words"
)

// PrivateChannel is implemented by a channel whose group chats can show
// something to some of their people only. Feishu sends it to each of them
// in their 1:1 chat with the bot (an ephemeral card cannot be updated and
// reaches nobody offline); DingTalk delivers the card in the group to
// those recipients, and a message by the robot's 1:1 send. A private
// approval on a channel without it is not shown at all (fail closed: the
// engine cancels it).
type PrivateChannel interface {
	Channel
	// ShowApprovalTo shows v, the whole card of a private approval of the
	// group chat to, to users only, and returns a reference to each card
	// it sent. It fails when the card reached none of them.
	ShowApprovalTo(ctx context.Context, to Target, users []approval.UserID, v cards.View) ([]approval.CardRef, error)
	// SendTo says out, which belongs to the group chat to, to users only.
	SendTo(ctx context.Context, to Target, users []approval.UserID, out Outgoing) error
}

// ErrNoPrivacy is the error of a private approval, or of what its turn
// says privately, on a channel that cannot show anything to some people
// only (not a PrivateChannel).
var ErrNoPrivacy = errors.New("channels: this channel cannot show anything to some people of a chat only")

// showPrivate shows a private approval: its whole card, with its buttons,
// to the people who may see it (PrivateChannel.ShowApprovalTo through the
// channel where it is decided: the approvers' chat's when it has one), and
// then the redacted card to everyone in its chat (and in its approvers'
// chat). If the whole card reaches nobody the request fails and nothing is
// shown in the chat; a redacted card that cannot be sent is logged and
// left out.
func (p *Presenter) showPrivate(ctx context.Context, a *approval.Approval) ([]approval.CardRef, error) {
	own := Target{Channel: a.Channel, ChatID: a.ChatID, ThreadID: p.threadOf(a), UserID: a.Requester}
	where := own
	if a.ApproveIn != nil {
		where = Target{Channel: a.ApproveIn.Channel, ChatID: a.ApproveIn.ChatID}
	}
	fail := func(err error) error {
		if a.ApproveIn != nil {
			return fmt.Errorf("%w: %w", approval.ErrApproversUnreachable, err)
		}
		return err
	}
	full := p.pendingCard(ctx, a)
	refs, err := p.showTo(ctx, a, where, a.Viewers(), full, true)
	if err != nil {
		return nil, fail(err)
	}
	redacted := cards.Redact(full)
	places := []Target{where}
	if where.Channel != own.Channel || where.ChatID != own.ChatID {
		places = append(places, own)
	}
	for _, to := range places {
		if to.ChatID == "" {
			continue // approve_in direct: the whole cards went 1:1, there is no chat
		}
		ref, err := p.showIn(ctx, a, to, redacted)
		if err != nil {
			p.log.Warn("the redacted card could not be sent to the chat; the approval waits on its private cards all the same",
				"channel", to.Channel, "chat_id", to.ChatID, "approval_id", a.ID, "err", err)
			continue
		}
		refs = append(refs, ref)
	}
	p.log.Debug("private approval shown", "channel", where.Channel, "chat_id", where.ChatID, "approval_id", a.ID, "cards", len(refs))
	return refs, nil
}

// showTo shows v, a card of a, to users only, through the PrivateChannel
// of to's channel (PrivateChannel.ShowApprovalTo: in the chat to, or 1:1
// when to names no chat), and returns the references of the cards it
// sent, marked private (CardRef.Private) when private is set. It fails
// when the card reached none of them, or the channel cannot show a card
// to some people only (ErrNoPrivacy).
func (p *Presenter) showTo(ctx context.Context, a *approval.Approval, to Target, users []approval.UserID, v cards.View, private bool) ([]approval.CardRef, error) {
	ch, err := p.reg.Channel(to.Channel)
	if err != nil {
		return nil, fmt.Errorf("show approval %s: %w", a.ID, err)
	}
	pc, ok := ch.(PrivateChannel)
	if !ok {
		return nil, fmt.Errorf("show approval %s to some people only on %s: %w", a.ID, to.Channel, ErrNoPrivacy)
	}
	refs, err := pc.ShowApprovalTo(ctx, to, users, v)
	if err != nil {
		return nil, fmt.Errorf("show approval %s to some people only on %s: %w", a.ID, to.Channel, err)
	}
	for i := range refs {
		refs[i].Private = private
		if refs[i].Channel == "" {
			refs[i].Channel = to.Channel
		}
	}
	return refs, nil
}

// viewOn is v as card ref of a shows it: the redacted view on a card of a
// private approval that is not one of its private cards.
func viewOn(a *approval.Approval, ref approval.CardRef, v cards.View) cards.View {
	if a.Private() && !ref.Private {
		return cards.Redact(v)
	}
	return v
}

// viewFor is v as user sees it: the redacted view of a private approval
// for a person who may not see it (approval.Approval.MaySee).
func viewFor(a *approval.Approval, user approval.UserID, v cards.View) cards.View {
	if !a.MaySee(user) {
		return cards.Redact(v)
	}
	return v
}

// redactedLine is the one line a private approval's chat reads of it.
func (p *Presenter) redactedLine(a *approval.Approval) string {
	v := cards.Redact(p.pendingView(a))
	return cards.RedactedLine(v, requesterName(a), p.cfg.Lang)
}

// requesterName is who asked for a, as a line names them.
func requesterName(a *approval.Approval) string {
	if a.RequesterName != "" {
		return a.RequesterName
	}
	return string(a.Requester)
}

// privateTurns are the running private turns (agent.Say.Private), by
// conversation (a session runs one turn at a time): what they say goes to
// their requester only.
type privateTurns struct {
	mu sync.Mutex
	m  map[approval.SessionKey]*privateTurn
}

// privateTurn is one such turn.
type privateTurn struct {
	// user is its requester, who reads what it says; name is how the
	// chat names them.
	user approval.UserID
	name string
	// held are the tool results held until an answer follows (a channel
	// that folds results, ResultFolder); said tells that something was
	// sent privately, so the chat is told once, when the turn ends;
	// failed that something could not be.
	held         []Outgoing
	said, failed bool
}

// open returns the private turn of in's conversation, begun now if it
// was not yet.
func (p *privateTurns) open(in agent.Inbound) *privateTurn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[approval.SessionKey]*privateTurn{}
	}
	t := p.m[in.Session]
	if t == nil {
		name := in.UserName
		if name == "" {
			name = string(in.User)
		}
		t = &privateTurn{user: in.User, name: name}
		p.m[in.Session] = t
	}
	return t
}

// end forgets the private turn of in's conversation.
func (p *privateTurns) end(in agent.Inbound) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, in.Session)
}

// sayPrivately handles s when the turn of in is private (s.Private, which
// the agent decides, the same for the live turn, its resumption on any
// replica and a frozen approval's resolution: agent/privacy.go): its tool
// results, notices and answer go to its requester only
// (PrivateChannel.SendTo), no stream is opened in the chat, and when the
// turn ends the chat reads one line: the answer was sent to the requester
// privately. said reports that s needs nothing more (awaiting and
// turn_ended still go on to a TurnListener). Fails closed: what cannot be
// sent privately is not said in the chat either.
func (p *Presenter) sayPrivately(ctx context.Context, ch Channel, in agent.Inbound, to Target, s agent.Say) (said bool, err error) {
	if s.Private == nil {
		if s.Kind == agent.SayTurnEnded {
			p.private.end(in) // nothing of a turn before it is left over
		}
		return false, nil
	}
	t := p.private.open(in)
	log := p.log.With("channel", in.Channel, "chat_id", in.ChatID, "private_turn", s.Private.Turn)
	send := func(out Outgoing) error {
		pc, ok := ch.(PrivateChannel)
		if !ok {
			t.failed = true
			return fmt.Errorf("say privately in %s: %w", in.Channel, ErrNoPrivacy)
		}
		if err := pc.SendTo(ctx, to, []approval.UserID{t.user}, out); err != nil {
			t.failed = true
			return err
		}
		t.said = true
		return nil
	}
	_, folds := ch.(ResultFolder)
	switch s.Kind {
	case agent.SayAwaiting:
		return false, nil
	case agent.SayDelta, agent.SayStreamEnd:
		if s.Kind == agent.SayStreamEnd && s.IsError {
			return true, send(Outgoing{Kind: OutNotice, Text: s.Text, IsError: true})
		}
		return true, nil // never streamed in the chat; the answer follows whole
	case agent.SayToolResult:
		out := Outgoing{Kind: OutToolResult, Text: s.Text, Tool: s.Tool, Args: s.Args, IsError: s.IsError}
		if folds {
			t.held = append(t.held, out)
			return true, nil
		}
		return true, send(out)
	case agent.SayAnswer:
		// The answer follows every result held: this turn's private ones,
		// and those the chat's folding held before it became private.
		t.held = nil
		p.held.take(in)
		return true, send(Outgoing{Kind: OutAnswer, Text: s.Text})
	case agent.SayTurnEnded:
		var errs []error
		for _, out := range t.held {
			errs = append(errs, send(out))
		}
		p.private.end(in)
		line := ""
		switch {
		case t.failed:
			line = words.In(p.cfg.Lang, words.PrivateUnsent, t.name)
		case t.said:
			line = words.In(p.cfg.Lang, words.PrivateAnswer, t.name)
		}
		if line != "" {
			if err := ch.Send(ctx, to, Outgoing{Kind: OutNotice, Text: line}); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			log.Warn("saying a private turn's end failed", "err", err)
		}
		return false, nil // the TurnListener still learns the turn ended
	}
	return true, send(Outgoing{Kind: outKind(s.Kind), Text: s.Text, Tool: s.Tool, Args: s.Args, IsError: s.IsError})
}

// noticeAbout says text, the answer to user's typed decision of a, in the
// chat of to; of a private approval, to user only (when they may see it),
// the chat reading one line instead.
func (p *Presenter) noticeAbout(ctx context.Context, ch Channel, to Target, log *slog.Logger, a *approval.Approval, user approval.UserID, text string) {
	if !a.Private() {
		notice(ctx, ch, to, log, text)
		return
	}
	if !a.MaySee(user) {
		// Not theirs to decide: the answer says so (and who may), nothing
		// of the call.
		notice(ctx, ch, to, log, text)
		return
	}
	line := words.In(p.cfg.Lang, words.PrivateResult, user)
	pc, ok := ch.(PrivateChannel)
	switch {
	case !ok:
		log.Warn("the answer to a typed decision of a private approval cannot be sent privately", "err", ErrNoPrivacy)
		line = words.In(p.cfg.Lang, words.PrivateUnsent, user)
	default:
		if err := pc.SendTo(ctx, to, []approval.UserID{user}, Outgoing{Kind: OutNotice, Text: text}); err != nil {
			log.Warn("sending the answer to a typed decision privately failed", "err", err)
			line = words.In(p.cfg.Lang, words.PrivateUnsent, user)
		}
	}
	notice(ctx, ch, to, log, line)
}

// readerOf is who reads the router's answer to m (a command's, the list
// of an ambiguous bare 确认): its sender alone in a 1:1 chat, everyone in a
// group chat (""). Every answer that names an approval or a grant shows
// it whole only to a reader approval.Approval.MaySee (or
// approval.GrantMaySee) allows: in a group, a private approval or its
// grant is named by its redacted line, whoever asked, since the whole
// chat reads the answer.
func readerOf(m Message) approval.UserID {
	if m.ChatType == "p2p" {
		return m.UserID
	}
	return ""
}

// pendingLineOf is how /pending lists approval a for reader: an approval
// reader may not see (a private one, in a group) by its code and
// redacted line.
func (p *Presenter) pendingLineOf(l words.Lang, a *approval.Approval, code string, reader approval.UserID) (string, bool) {
	if a.MaySee(reader) {
		return "", false
	}
	v := cards.Redact(p.pendingView(a))
	return words.Text(l, words.PrivateCommandAt, code, cards.RedactedLine(v, requesterName(a), string(l))), true
}
