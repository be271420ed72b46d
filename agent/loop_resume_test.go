package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// eraseOnRequest asks for an erase of the target named by a user message
// "erase X" (call id "c-X"); after a tool reply it answers "after: <the
// reply>", and otherwise "ok".
func eraseOnRequest(reqs *requests) scripted {
	return func(req agent.Request) (agent.Response, error) {
		if reqs != nil {
			reqs.add(req)
		}
		last := req.Messages[len(req.Messages)-1]
		if target, ok := strings.CutPrefix(last.Content, "erase "); ok && last.Role == agent.RoleUser {
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{call("c-"+target, "erase", target)}}}, nil
		}
		if last.Role == agent.RoleTool {
			return agent.Response{Message: agent.Message{Content: "after: " + last.Content}}, nil
		}
		return agent.Response{Message: agent.Message{Content: "ok"}}, nil
	}
}

// updates returns the system messages of a conversation that mention id.
func updates(msgs []agent.Message, id approval.ID) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == agent.RoleSystem && strings.Contains(m.Content, string(id)) {
			out = append(out, m.Content)
		}
	}
	return out
}

// toolReply returns the tool message answering call id.
func toolReply(t *testing.T, msgs []agent.Message, id string) agent.Message {
	t.Helper()
	for _, m := range msgs {
		if m.Role == agent.RoleTool && m.ToolCallID == id {
			return m
		}
	}
	t.Fatalf("no reply to call %s in %+v", id, msgs)
	return agent.Message{}
}

// said returns the texts of what the agent said of kind k.
func (s *speaker) saidOf(k agent.SayKind) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.said {
		if m.Kind == k {
			out = append(out, m.Text)
		}
	}
	return out
}

// suspend sends text in session s, waits for its approval, and restarts
// the loop, as a replica's restart would: the turn stays suspended.
func (h *harness) suspend(t *testing.T, s, text string) *approval.Approval {
	t.Helper()
	ch := h.submit(t, s, text)
	a := h.nextApproval(t)
	h.restart(t)
	result(t, ch)
	return a
}

// noMoreResumed fails if another turn is resumed within a moment.
func (h *harness) noMoreResumed(t *testing.T) {
	t.Helper()
	select {
	case r := <-h.speak.resumed:
		t.Fatalf("a second resumption: %+v", r)
	case <-time.After(200 * time.Millisecond):
	}
}

// The replica that waited restarted (its loop closed, the approval open):
// the decision resumes the turn on the new loop. The chat gets the tool's
// result, then the model's answer, once; the model read the result as the
// reply to its own call; nothing stays suspended.
func TestResumeAfterRestart(t *testing.T) {
	var reqs requests
	h := newHarness(t, eraseOnRequest(&reqs))
	ch := h.submit(t, "s1", "erase x")
	a := h.nextApproval(t)
	h.restart(t)
	if r := result(t, ch); r.Actions[0].Status != approval.StatusPending || r.Waiting != "" {
		t.Fatalf("turn stopped by the restart = %+v", r)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 1 || conv.Suspended[0].Approval != a.ID || conv.Suspended[0].Origin.ChatID != "s1" {
		t.Fatalf("suspended = %+v", conv.Suspended)
	}

	o := h.decide(t, a, approval.Approve)
	if o.Status != approval.StatusExecuted {
		t.Fatalf("decision = %+v", o)
	}
	r := h.nextResumed(t)
	if r.to.Resumed != a.ID || r.to.ChatID != "s1" || r.res.Text != "after: erase done (run 1)" {
		t.Fatalf("resumed turn = %+v", r)
	}
	if len(r.res.Actions) != 1 || r.res.Actions[0].Status != approval.StatusExecuted || string(r.res.Actions[0].Input) != `{"target":"x"}` {
		t.Fatalf("resumed actions = %+v", r.res.Actions)
	}
	if got := h.speak.saidOf(agent.SayToolResult); len(got) != 1 || got[0] != "erase done (run 1)" {
		t.Fatalf("tool results said = %q", got)
	}
	if got := h.speak.saidOf(agent.SayAnswer); len(got) != 1 || got[0] != "after: erase done (run 1)" {
		t.Fatalf("answers said = %q", got)
	}
	// The model read the result as the reply to its call, not as an update.
	last := reqs.last().Messages
	if m := last[len(last)-1]; m.Role != agent.RoleTool || m.ToolCallID != "c-x" || m.Status != approval.StatusExecuted {
		t.Fatalf("the model's last message = %+v", m)
	}
	conv, _ = h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 0 || len(updates(conv.Messages, a.ID)) != 0 {
		t.Fatalf("after the resumption: suspended %+v, history %+v", conv.Suspended, conv.Messages)
	}

	// Both replicas see the outcome: a second Resume does nothing.
	h.current().Resume(a, o)
	h.noMoreResumed(t)
	if h.del.Runs.Load() != 1 {
		t.Fatalf("erase ran %d times", h.del.Runs.Load())
	}
}

// A resumed turn is a turn: it may ask for another approval (naming the
// requester by the name the platform gave, as the first did) and take its
// outcome itself (it claims it as it waits).
func TestResumedTurnAsksAgain(t *testing.T) {
	model := scripted(func(req agent.Request) (agent.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == agent.RoleUser:
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{call("c-1", "erase", "first")}}}, nil
		case last.Role == agent.RoleTool && last.ToolCallID == "c-1":
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{call("c-2", "erase", "second")}}}, nil
		}
		return agent.Response{Message: agent.Message{Content: "both done"}}, nil
	})
	h := newHarness(t, model)
	first := h.suspend(t, "s1", "erase both")
	h.decide(t, first, approval.Approve)
	second := h.nextApproval(t) // asked by the resumed turn
	if first.RequesterName != "Alice 张" || second.RequesterName != first.RequesterName {
		t.Fatalf("requester names %q then %q; the resumed turn's approval must name the requester as the first did", first.RequesterName, second.RequesterName)
	}
	h.decide(t, second, approval.Approve)
	r := h.nextResumed(t)
	if r.to.Resumed != first.ID || r.res.Text != "both done" || len(r.res.Actions) != 2 || r.res.Actions[1].Status != approval.StatusExecuted {
		t.Fatalf("resumed = %+v", r)
	}
	if h.del.Runs.Load() != 2 {
		t.Fatalf("erase ran %d times", h.del.Runs.Load())
	}
}

// A turn that runs out of time while waiting says the approval is still
// open (not that the work stopped); the late decision resumes it: the
// "still waiting" note leaves the history and the model answers.
func TestResumeAfterDeadline(t *testing.T) {
	h := newHarness(t, eraseOnRequest(nil), func(c *agent.LoopConfig) { c.TurnTimeout = 300 * time.Millisecond })
	r := result(t, h.submit(t, "s1", "erase x"))
	a := h.nextApproval(t)
	if r.Err != nil || len(r.Actions) != 1 || r.Actions[0].Status != approval.StatusPending || r.Waiting != a.ID {
		t.Fatalf("turn that ran out of time = %+v", r)
	}
	for _, text := range append(h.speak.notices(), r.Text) {
		if strings.Contains(text, "too long") || strings.Contains(text, "stopped") {
			t.Fatalf("said %q while the approval is still open", text)
		}
	}
	if !strings.Contains(r.Text, "still waiting") || !strings.Contains(r.Text, "continue here") {
		t.Fatalf("result text = %q", r.Text)
	}
	if n := h.speak.notices(); len(n) != 1 || n[0] != r.Text {
		t.Fatalf("notices = %q", n)
	}

	if o := h.decide(t, a, approval.Approve); o.Status != approval.StatusExecuted {
		t.Fatalf("late decision = %+v", o)
	}
	res := h.nextResumed(t)
	if res.res.Text != "after: erase done (run 1)" {
		t.Fatalf("resumed = %+v", res)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	for _, m := range conv.Messages {
		if m.Content == r.Text {
			t.Fatalf("the still-waiting note stayed in the history: %+v", conv.Messages)
		}
	}
	if m := toolReply(t, conv.Messages, "c-x"); m.Status != approval.StatusExecuted || m.Content != "erase done (run 1)" {
		t.Fatalf("reply = %+v", m)
	}
	h.noMoreResumed(t)
}

// A message that came while the approval was open is answered first; the
// later decision resumes the turn after it: the reply of the call is
// updated in place and an update after the newer messages tells the model.
func TestResumeAfterNewerMessages(t *testing.T) {
	var reqs requests
	h := newHarness(t, eraseOnRequest(&reqs), func(c *agent.LoopConfig) { c.TurnTimeout = 300 * time.Millisecond })
	result(t, h.submit(t, "s1", "erase x"))
	a := h.nextApproval(t)
	if r := result(t, h.submit(t, "s1", "hello")); r.Text != "ok" {
		t.Fatalf("second turn = %+v", r)
	}
	h.decide(t, a, approval.Reject)
	res := h.nextResumed(t)
	if res.res.Text != "ok" || res.res.Actions[0].Status != approval.StatusRejected {
		t.Fatalf("resumed = %+v", res)
	}
	msgs := reqs.last().Messages
	if u := updates(msgs, a.ID); len(u) != 1 || !strings.Contains(u[0], "rejected") {
		t.Fatalf("updates = %q\n%+v", u, msgs)
	}
	if m := toolReply(t, msgs, "c-x"); m.Status != approval.StatusRejected || !strings.Contains(m.Content, "declined") {
		t.Fatalf("reply = %+v", m)
	}
	if got := h.speak.saidOf(agent.SayToolResult); len(got) != 0 {
		t.Fatalf("a rejected call was shown as a result: %q", got)
	}
}

// Nobody decides and nobody waits: the sweeper expires the approval and
// the turn resumes with "expired".
func TestResumeAfterExpiry(t *testing.T) {
	h := newHarness(t, eraseOnRequest(nil))
	a := h.suspend(t, "s1", "erase x")
	h.clk.Advance(a.ExpiresAt.Sub(h.clk.Now()) + time.Second)
	if n, err := h.engine.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	r := h.nextResumed(t)
	if r.res.Actions[0].Status != approval.StatusExpired || !strings.Contains(r.res.Text, "expired") {
		t.Fatalf("resumed = %+v", r)
	}
	if h.del.Runs.Load() != 0 {
		t.Fatal("the tool ran")
	}
}

// The history lost the turn (expired, or wiped): the resumption says so
// in one sentence, once, instead of guessing.
func TestResumeOfAGoneTurnSaysSo(t *testing.T) {
	h := newHarness(t, eraseOnRequest(nil))
	a := h.suspend(t, "s1", "erase x")
	if err := h.history.Save(context.Background(), "s1", agent.Conversation{}); err != nil {
		t.Fatal(err)
	}
	o := h.decide(t, a, approval.Approve)
	r := h.nextResumed(t)
	if !strings.Contains(r.res.Text, "no longer holds the request") || !strings.Contains(r.res.Text, "executed") {
		t.Fatalf("resumed = %+v", r)
	}
	if n := h.speak.notices(); len(n) != 1 || n[0] != r.res.Text {
		t.Fatalf("notices = %q", n)
	}
	h.current().Resume(a, o)
	h.noMoreResumed(t)
}

// An approval superseded by a newer one while no loop waited on it is
// written into the history (its call was not run), without a turn of its
// own; the newer one resumes its turn.
func TestSupersededIsRecordedNotResumed(t *testing.T) {
	var reqs requests
	h := newHarness(t, eraseOnRequest(&reqs))
	first := h.suspend(t, "s1", "erase a")

	second := h.suspend(t, "s1", "erase b")
	if o := h.decide(t, first, approval.Approve); o.Status != approval.StatusSuperseded {
		t.Fatalf("deciding the superseded approval = %+v", o)
	}
	if o := h.decide(t, second, approval.Approve); o.Status != approval.StatusExecuted {
		t.Fatalf("deciding the newer approval = %+v", o)
	}
	r := h.nextResumed(t)
	if r.to.Resumed != second.ID || r.res.Text != "after: erase done (run 1)" {
		t.Fatalf("resumed = %+v", r)
	}
	h.noMoreResumed(t)

	result(t, h.submit(t, "s1", "what happened?"))
	msgs := reqs.last().Messages
	if u := updates(msgs, first.ID); len(u) != 1 || !strings.Contains(u[0], "superseded") {
		t.Fatalf("updates on the superseded approval: %q\nmessages: %+v", u, msgs)
	}
	if m := toolReply(t, msgs, "c-a"); m.Status != approval.StatusSuperseded || !strings.Contains(m.Content, "Not run") {
		t.Fatalf("reply of the superseded call = %+v", m)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 0 {
		t.Fatalf("still suspended %+v", conv.Suspended)
	}
	if h.del.Runs.Load() != 1 {
		t.Fatalf("erase ran %d times", h.del.Runs.Load())
	}
}

// A superseded approval is written into the history in the very turn that
// superseded it, when that turn waits for its own approval to the end.
func TestSupersededResolvedInTheSupersedingTurn(t *testing.T) {
	h := newHarness(t, eraseOnRequest(nil))
	first := h.suspend(t, "s1", "erase a")

	ch := h.submit(t, "s1", "erase b")
	second := h.nextApproval(t)
	h.decide(t, second, approval.Approve)
	if r := result(t, ch); r.Actions[0].Status != approval.StatusExecuted {
		t.Fatalf("second turn = %+v", r)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 0 {
		t.Fatalf("still suspended %+v", conv.Suspended)
	}
	if u := updates(conv.Messages, first.ID); len(u) != 1 || !strings.Contains(u[0], "superseded") {
		t.Fatalf("updates on the superseded approval: %q\nhistory: %+v", u, conv.Messages)
	}
	h.noMoreResumed(t)
}

// The replica that waited restarted, and the approval is decided while
// another turn of the conversation runs (here: one that waits for the
// model): that turn's end finds the approval ended, and the suspended turn
// is still continued, once (its result said, the model going on), not
// only written into the history with no one told.
func TestResumeWhileAnotherTurnRuns(t *testing.T) {
	inModel, release := make(chan struct{}), make(chan struct{})
	erase := eraseOnRequest(nil)
	h := newHarness(t, scripted(func(req agent.Request) (agent.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleUser && last.Content == "hello" {
			close(inModel)
			<-release
		}
		return erase(req)
	}))
	a := h.suspend(t, "s1", "erase x")
	ch := h.submit(t, "s1", "hello")
	<-inModel
	if o := h.decide(t, a, approval.Approve); o.Status != approval.StatusExecuted {
		t.Fatalf("decision = %+v", o)
	}
	close(release)
	if r := result(t, ch); r.Text != "ok" {
		t.Fatalf("the other turn = %+v", r)
	}
	r := h.nextResumed(t)
	if r.to.Resumed != a.ID || len(r.res.Actions) != 1 || r.res.Actions[0].Status != approval.StatusExecuted {
		t.Fatalf("resumed turn = %+v", r)
	}
	if got := h.speak.saidOf(agent.SayToolResult); len(got) != 1 || got[0] != "erase done (run 1)" {
		t.Fatalf("tool results said = %q", got)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 0 {
		t.Fatalf("still suspended: %+v", conv.Suspended)
	}
	h.noMoreResumed(t)
}

// killedHistory is a History whose saves stop while killed is set: the
// process that saved the turn before its card was killed, and never saved
// it again.
type killedHistory struct {
	agent.History
	killed atomic.Bool
}

func (k *killedHistory) Save(ctx context.Context, s approval.SessionKey, c agent.Conversation) error {
	if k.killed.Load() {
		return nil
	}
	return k.History.Save(ctx, s, c)
}

// TestKilledMidRoundKeepsEveryReply: a round of a call that runs at once
// (a read) and one that waits for a person, in either order; the replica
// is killed while it waits, so the history is the one saved before the
// card. The resumption that the decision brings finds a reply for every
// call of the round: the model reads what the read returned (and the
// model's API refuses a call without its reply), as the replies to its
// calls, with no update after them (nothing came after the round). Before,
// the history saved before the card held the placeholders of the waiting
// calls alone, and waiting replies followed by the round's other replies
// were taken for replies that newer messages followed.
func TestKilledMidRoundKeepsEveryReply(t *testing.T) {
	look, erase := call("c1", "look", "orders"), call("c2", "erase", "x")
	for name, round := range map[string][]agent.ToolCall{"read first": {look, erase}, "waiting first": {erase, look}} {
		t.Run(name, func(t *testing.T) {
			var reqs requests
			var k *killedHistory
			h := newHarness(t, recording(callThenSummarise(round...), &reqs), func(c *agent.LoopConfig) {
				k = &killedHistory{History: c.History}
				c.History = k
			})
			ch := h.submit(t, "s1", "look and erase")
			a := h.nextApproval(t)
			k.killed.Store(true)
			h.restart(t)
			result(t, ch)
			k.killed.Store(false)
			h.decide(t, a, approval.Approve)
			if r := h.nextResumed(t); !strings.Contains(r.res.Text, "look done (run 1)") || !strings.Contains(r.res.Text, "erase done (run 1)") {
				t.Fatalf("the resumed turn ended with %+v", r.res)
			}
			msgs := reqs.last().Messages
			replies := toolReplies(reqs.last())
			if replies["c1"] != "look done (run 1)" || replies["c2"] != "erase done (run 1)" {
				t.Fatalf("the model read the replies %q", replies)
			}
			if u := updates(msgs, a.ID); len(u) != 0 {
				t.Fatalf("the model read an update after its round: %q", u)
			}
		})
	}
}
