package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// eraseThenTell is eraseOnRequest that answers an update on an approval
// (a system message last) with "told: <the update>".
func eraseThenTell(reqs *requests) scripted {
	inner := eraseOnRequest(reqs)
	return func(req agent.Request) (agent.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == agent.RoleSystem {
			if reqs != nil {
				reqs.add(req)
			}
			return agent.Response{Message: agent.Message{Content: "told: " + last.Content}}, nil
		}
		return inner(req)
	}
}

// resolve settles the frozen approval a as alice.
func (h *harness) resolve(t *testing.T, a *approval.Approval, r approval.Resolution, comment string) approval.Outcome {
	t.Helper()
	o, err := h.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Resolve, Resolution: r, Actor: "alice",
		Source: approval.SourceAPI, PayloadSHA256: a.PayloadSHA256, Comment: comment})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestResolutionResumesTheConversation: after the turn that asked took
// its approval's frozen outcome, a person's resolution continues the
// conversation once, in the chat it came from: the model reads the call's
// reply brought up to date and an update saying who resolved it how (and
// their note), and its answer is said; for a retry, the tool ran exactly
// once more and its result is said as a tool result first.
func TestResolutionResumesTheConversation(t *testing.T) {
	for _, tc := range []struct {
		r          approval.Resolution
		wantReply  string
		wantUpdate string
		wantStatus approval.Status
		runs       int64
	}{
		{approval.ResolveDone, "Done: its result had been unknown; alice checked by hand and recorded that it took effect (the rows are gone).",
			"alice resolved it as done: it took effect, as checked by hand. Their note: the rows are gone.", approval.StatusExecuted, 0},
		{approval.ResolveAbandon, "Not done: its result had been unknown; alice abandoned it (the rows are gone). Take it as not done; do not retry it on your own, ask the user.",
			"alice resolved it as abandoned: take it as not done.", approval.StatusFailed, 0},
		{approval.ResolveRetry, "erase done (run 1)", "alice resolved it by running it once more; the retry ended executed.", approval.StatusExecuted, 1},
	} {
		t.Run(string(tc.r), func(t *testing.T) {
			var reqs requests
			h := newHarness(t, eraseThenTell(&reqs))
			ch := h.submit(t, "s1", "erase orders")
			a := h.nextApproval(t)
			abandonClaim(t, h, a)
			if r := result(t, ch); len(r.Actions) != 1 || r.Actions[0].Status != approval.StatusFrozen {
				t.Fatalf("the turn took %+v, want frozen", r.Actions)
			}
			o := h.resolve(t, a, tc.r, "the rows are gone")
			if o.Resolution != tc.r || o.Status != tc.wantStatus {
				t.Fatalf("resolution = %+v", o)
			}
			r := h.nextResumed(t)
			if r.to.Resumed != a.ID || r.to.ChatID != "s1" || r.to.Channel != "test" {
				t.Fatalf("resumed in %+v", r.to)
			}
			if len(r.res.Actions) != 1 || r.res.Actions[0].Status != tc.wantStatus || r.res.Actions[0].Result != tc.wantReply {
				t.Fatalf("resumed actions = %+v", r.res.Actions)
			}
			req := reqs.last()
			update := req.Messages[len(req.Messages)-1].Content
			if !strings.Contains(update, string(a.ID)) || !strings.Contains(update, tc.wantUpdate) {
				t.Fatalf("the model was told %q, want %q", update, tc.wantUpdate)
			}
			if got := toolReplies(req)["c-orders"]; got != tc.wantReply {
				t.Fatalf("the call's reply the model reads = %q, want %q", got, tc.wantReply)
			}
			if answers := h.speak.saidOf(agent.SayAnswer); len(answers) == 0 || answers[len(answers)-1] != "told: "+update {
				t.Fatalf("answers said = %q", answers)
			}
			if got := h.del.Runs.Load(); got != tc.runs {
				t.Fatalf("the tool ran %d times, want %d", got, tc.runs)
			}
			if tc.r == approval.ResolveRetry {
				if res := h.speak.saidOf(agent.SayToolResult); len(res) != 1 || res[0] != tc.wantReply {
					t.Fatalf("tool results said = %q", res)
				}
			}
			conv, _ := h.history.Load(context.Background(), "s1")
			if reply := toolReply(t, conv.Messages, "c-orders"); reply.Status != tc.wantStatus || reply.Content != tc.wantReply {
				t.Fatalf("the history's reply = %+v", reply)
			}
			// Once: a second hand-off of the same outcome (another
			// replica's, a redelivery) says nothing more.
			rec, err := h.engine.Get(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			h.current().Resume(rec, *rec.Outcome)
			h.noMoreResumed(t)
		})
	}
}

// TestResolutionWhileTheTurnStillRuns: a resolution that arrives while the
// turn that took the frozen outcome is still running (its model answers
// slowly) is not taken for that turn's: the turn never waits for a
// resolution. Once the turn has ended, the resolution continues the
// conversation.
func TestResolutionWhileTheTurnStillRuns(t *testing.T) {
	inner := eraseThenTell(nil)
	answering := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	h := newHarness(t, scripted(func(req agent.Request) (agent.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == agent.RoleTool {
			once.Do(func() {
				close(answering)
				<-release
			})
		}
		return inner(req)
	}))
	ch := h.submit(t, "s1", "erase orders")
	a := h.nextApproval(t)
	abandonClaim(t, h, a)
	<-answering                               // the turn took the frozen outcome; its model is answering
	h.resolve(t, a, approval.ResolveDone, "") // the engine hands its outcome to the loop
	close(release)
	if r := result(t, ch); len(r.Actions) != 1 || r.Actions[0].Status != approval.StatusFrozen {
		t.Fatalf("the turn took %+v, want frozen", r.Actions)
	}
	r := h.nextResumed(t)
	if r.to.Resumed != a.ID || len(r.res.Actions) != 1 || r.res.Actions[0].Status != approval.StatusExecuted {
		t.Fatalf("resumed in %+v with %+v", r.to, r.res.Actions)
	}
	h.noMoreResumed(t)
}
