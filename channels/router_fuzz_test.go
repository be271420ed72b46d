package channels_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// negatedOrUnclear are texts that must never approve a pending call.
var negatedOrUnclear = []string{
	"不确认", "别执行", "不要执行", "没确认", "不同意", "don't approve", "do not confirm", "not ok", "no way",
	"还没确认", "先别执行", "确认一下再说", "yes please", "ok?? wait", "确认 不", "@bot 不确认", "ＮＯ", "确认了吗",
	// Questions are never a decision.
	"确认？", "确认?", "确认吗？", "真的要执行吗", "ok?", "yes?", "Confirm?", "执行吗", "确定吗", "@bot 确认 ?", "ＹＥＳ？",
}

// fuzzRig builds one replica and returns a function that requests a fresh
// approval in session fake:c1 (requested by alice), sends text as alice,
// waits for the decision and returns the approval's state.
func fuzzRig(tb testing.TB) (try func(t testing.TB, text string) approval.State, g *rig) {
	g = newRig(tb, nil)
	try = func(t testing.TB, text string) approval.State {
		g.ch.reset()
		a, err := g.engine.Request(context.Background(), approval.Request{Session: "fake:c1", Channel: "fake", ChatID: "c1", Requester: "alice",
			Calls:   []approval.Call{{Tool: "erase", Args: []byte(`{"target":"fuzz"}`)}},
			Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh}, Summary: "erase: fuzz"})
		if err != nil {
			t.Fatal(err)
		}
		m := msg("alice", text)
		if err := g.router.HandleMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		g.drain()
		return g.state(t, a.ID)
	}
	return try, g
}

func TestNegatedRepliesNeverConfirm(t *testing.T) {
	try, g := fuzzRig(t)
	for _, text := range negatedOrUnclear {
		st := try(t, text)
		if st == approval.StateExecuted || st == approval.StateClaimed {
			t.Errorf("%q approved the call (state %s)", text, st)
		}
	}
	if n := g.erase.Runs.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
	if st := try(t, "不确认"); st != approval.StateRejected {
		t.Fatalf("不确认 left the approval %s, want rejected", st)
	}
	if st := try(t, "确认执行"); st != approval.StateExecuted {
		t.Fatalf("确认执行 left the approval %s, want executed", st)
	}
}

// FuzzHandleMessageText: whatever the text, routing never panics, and a
// pending call is approved only by a text the reply parser reads as a
// clear confirm (so a negation never decides to run it), rejected only by
// one it reads as a cancel (with or without a reason), and left pending
// by every other.
func FuzzHandleMessageText(f *testing.F) {
	for _, s := range append(negatedOrUnclear, "确认", "取消", "yes", "no", "", "  ", "\x00", "确认\n取消", "😀") {
		f.Add(s)
	}
	try, g := fuzzRig(f)
	parser, err := approval.NewReplyParser(approval.DefaultReplyConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.HasPrefix(text, "erase ") {
			t.Skip("the scripted model would request an approval of its own")
		}
		before := g.erase.Runs.Load()
		st := try(t, text)
		ran := g.erase.Runs.Load() - before
		if strings.ContainsAny(text, "?？") && (st != approval.StatePending || ran != 0) {
			t.Fatalf("question %q: state %s, runs %d", text, st, ran)
		}
		// As the router reads it: a cancel keyword may lead a reason
		// ("取消 用 orders_archive 表", "n 0"), and that still rejects.
		reply, _ := parser.ParseReason(text)
		switch reply {
		case approval.ReplyConfirm:
			if st != approval.StateExecuted || ran != 1 {
				t.Fatalf("confirm %q: state %s, runs %d", text, st, ran)
			}
		case approval.ReplyCancel:
			if st != approval.StateRejected || ran != 0 {
				t.Fatalf("cancel %q: state %s, runs %d", text, st, ran)
			}
		default:
			if st != approval.StatePending || ran != 0 {
				t.Fatalf("non-decision %q: state %s, runs %d", text, st, ran)
			}
		}
	})
}
