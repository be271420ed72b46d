package channels_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/storetest"
	. "github.com/hitlbot/hitlbot/channels"
)

// commandTests is the table of what ParseCommand reads (codes are 4
// lowercase letters or digits; a cancel keyword with something else after
// it is a reason, not a code).
var commandTests = []struct {
	text string
	want Command
}{
	{"/help", Command{Kind: CmdHelp}},
	{"  /HELP ", Command{Kind: CmdHelp}},
	{"@_user_1 /pending", Command{Kind: CmdPending}},
	{"／grants", Command{Kind: CmdGrants}},
	{"/revoke 2", Command{Kind: CmdRevoke, Arg: "2"}},
	{"/revoke ALL", Command{Kind: CmdRevoke, Arg: "all"}},
	{"/revoke", Command{Kind: CmdRevoke}},
	{"/cancel ab12", Command{Kind: CmdCancel, Arg: "ab12"}},
	{"/cancel", Command{Kind: CmdCancel}},
	{"确认 ab12", Command{Kind: CmdDecide, Arg: "ab12", Reply: approval.ReplyConfirm}},
	{"确认 AB12。", Command{Kind: CmdDecide, Arg: "ab12", Reply: approval.ReplyConfirm}},
	{"取消 9zz9", Command{Kind: CmdDecide, Arg: "9zz9", Reply: approval.ReplyCancel}},
	// A code typed in full-width forms (a Chinese input method's
	// full-width mode), after a full-width space, is the code.
	{"确认　ａｂ１２", Command{Kind: CmdDecide, Arg: "ab12", Reply: approval.ReplyConfirm}},
	{"取消 ９ＺＺ９。", Command{Kind: CmdDecide, Arg: "9zz9", Reply: approval.ReplyCancel}},
	{"/cancel ａｂ１２", Command{Kind: CmdCancel, Arg: "ab12"}},
	{"confirm ab12", Command{Kind: CmdDecide, Arg: "ab12", Reply: approval.ReplyConfirm}},
	{"cancel ab12", Command{Kind: CmdDecide, Arg: "ab12", Reply: approval.ReplyCancel}},
	{"回答 ab12 2", Command{Kind: CmdAnswer, Arg: "ab12", Text: "2", Body: "ab12 2"}},
	{"@bot ANSWER AB12 1,3", Command{Kind: CmdAnswer, Arg: "ab12", Text: "1,3", Body: "AB12 1,3"}},
	{"回答：ab12\n1: 2\n2: 自己定", Command{Kind: CmdAnswer, Arg: "ab12", Text: "1: 2\n2: 自己定", Body: "ab12\n1: 2\n2: 自己定"}},
	{"／answer 2", Command{Kind: CmdAnswer, Text: "2", Body: "2"}},
	{"回答 大的那个", Command{Kind: CmdAnswer, Text: "大的那个", Body: "大的那个"}},
	{"回答", Command{Kind: CmdAnswer}},
	{"回答一下这个问题", Command{}},
	{"answering machines", Command{}},
	// Not commands: the agent's, a reason, other words.
	{"/sql SELECT 1", Command{}},
	{"/tools", Command{}},
	{"/help me", Command{}},
	{"/pending now", Command{}},
	{"确认", Command{}},
	{"确认 abcde", Command{}},
	{"取消 表不对", Command{}},
	{"cancel: wrong table", Command{}},
	{"确认 ab12 and more", Command{}},
	{"不确认 ab12", Command{Kind: CmdDecide, Arg: "ab12", Reply: approval.ReplyCancel}}, // a negated confirm is a cancel, as a typed reply
	{"hello ab12", Command{}},
	{"", Command{}},
}

func TestParseCommand(t *testing.T) {
	p, err := approval.NewReplyParser(approval.DefaultReplyConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range commandTests {
		if got := ParseCommand(tc.text, p); got != tc.want {
			t.Errorf("ParseCommand(%q) = %+v, want %+v", tc.text, got, tc.want)
		}
	}
}

// FuzzParseCommand: whatever the text, a command's argument is lowercase
// and has no spaces, a decision names a well-formed code with a confirm
// or cancel, and a text that is not a command is CmdNone with nothing
// else.
func FuzzParseCommand(f *testing.F) {
	for _, tc := range commandTests {
		f.Add(tc.text)
	}
	p, err := approval.NewReplyParser(approval.DefaultReplyConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c := ParseCommand(text, p)
		if c.Arg != strings.ToLower(c.Arg) || strings.ContainsAny(c.Arg, " \t\n") {
			t.Fatalf("ParseCommand(%q) = %+v: argument not lowercase or has spaces", text, c)
		}
		switch c.Kind {
		case CmdDecide:
			if !approval.ValidCode(c.Arg) || (c.Reply != approval.ReplyConfirm && c.Reply != approval.ReplyCancel) {
				t.Fatalf("ParseCommand(%q) = %+v", text, c)
			}
		case CmdNone:
			if c != (Command{}) {
				t.Fatalf("ParseCommand(%q) = %+v", text, c)
			}
		case CmdHelp, CmdPending, CmdGrants:
			if c.Arg != "" {
				t.Fatalf("ParseCommand(%q) = %+v", text, c)
			}
		case CmdRevoke, CmdCancel:
		case CmdAnswer:
			// The code, when read, is the body's first word; the text
			// what follows it; neither is read without the body.
			if c.Arg != "" && (!approval.ValidCode(c.Arg) || !strings.HasPrefix(strings.ToLower(c.Body), c.Arg) ||
				!strings.HasSuffix(c.Body, c.Text)) || (c.Arg == "" && c.Text != c.Body) ||
				c.Body != strings.TrimSpace(c.Body) || c.Reply != approval.ReplyNone {
				t.Fatalf("ParseCommand(%q) = %+v", text, c)
			}
		default:
			t.Fatalf("ParseCommand(%q) = unknown kind %q", text, c.Kind)
		}
	})
}

// FuzzCodes: every approval of a chat gets a well-formed code, no two
// the same, and each code names its own approval.
func FuzzCodes(f *testing.F) {
	f.Add(uint8(3), "s")
	f.Add(uint8(40), "fake:c1")
	f.Fuzz(func(t *testing.T, n uint8, sess string) {
		as := make([]*approval.Approval, int(n%64))
		for i := range as {
			as[i] = &approval.Approval{ID: approval.NewID(approval.SessionKey(sess)), CreatedAt: time.Unix(int64(i%5), 0)}
		}
		codes := approval.Codes(as)
		seen := map[string]bool{}
		for _, a := range as {
			c := codes[a.ID]
			if !approval.ValidCode(c) || seen[c] {
				t.Fatalf("code %q of %s: malformed or taken", c, a.ID)
			}
			seen[c] = true
			if got := approval.ByCode(as, c); len(got) != 1 || got[0] != a {
				t.Fatalf("ByCode(%q) = %v", c, got)
			}
		}
	})
}

// TestCommandsInChat: with per-user sessions two approvals wait in one
// chat, and alice may decide both: her bare 确认 is ambiguous (the bot
// lists the codes and decides nothing), /pending lists both with their codes, 确认 <code> decides the
// one named, /cancel <code> by someone who may not withdraw it is refused
// and by its requester withdraws it; /help answers in the chat's language.
// None of these reaches the model.
func TestCommandsInChat(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		// alice and bob may decide each other's approvals; carol neither.
		pc := approval.DefaultPolicyConfig()
		pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"alice", "bob"}}}
		pol, err := approval.NewPolicy(pc)
		if err != nil {
			t.Fatal(err)
		}
		g := newRigWith(t, store, nil, func(c *agent.LoopConfig) { c.Policy = func() *approval.Policy { return pol } },
			func(c *RouterConfig) { c.Scope = ScopePerUser })
		ctx := context.Background()
		ask := func(user approval.UserID, target string) *approval.Approval {
			t.Helper()
			g.send(t, msg(user, "erase "+target))
			var a *approval.Approval
			eventually(t, "an approval of "+string(user), func() bool {
				p, err := g.engine.Pending(ctx, approval.SessionKey("fake:c1:"+string(user)))
				if err != nil {
					t.Fatal(err)
				}
				a = p
				return p != nil
			})
			return a
		}
		a := ask("alice", "orders")
		b := ask("bob", "users")
		codes := approval.Codes([]*approval.Approval{a, b})
		ca, cb := codes[a.ID], codes[b.ID]

		g.send(t, msg("alice", "确认"))
		g.drain()
		if g.state(t, a.ID) != approval.StatePending || !g.ch.hasText("answer", "Several approvals wait in this chat") ||
			!g.ch.hasText("answer", ca+" — ") || !g.ch.hasText("answer", cb+" — ") {
			t.Fatalf("bare 确认 with two waiting: state %s, texts %v", g.state(t, a.ID), g.ch.texts())
		}

		g.send(t, msg("carol", "/pending"))
		if !g.ch.hasText("answer", "Waiting for a decision") || !g.ch.hasText("answer", ca+` — erase: erase {"target":"orders"} (asked by alice`) ||
			!g.ch.hasText("answer", cb+` — erase: erase {"target":"users"} (asked by bob`) {
			t.Fatalf("/pending: %v", g.ch.texts())
		}

		g.send(t, msg("alice", "确认 "+strings.ToUpper(ca)))
		g.drain()
		if g.state(t, a.ID) != approval.StateExecuted || g.state(t, b.ID) != approval.StatePending || g.erase.Runs.Load() != 1 {
			t.Fatalf("确认 %s: a %s, b %s, %d runs", ca, g.state(t, a.ID), g.state(t, b.ID), g.erase.Runs.Load())
		}

		g.send(t, msg("carol", "/cancel "+cb))
		if g.state(t, b.ID) != approval.StatePending || !g.ch.hasText("answer", "Only its requester or an approver may withdraw it") {
			t.Fatalf("/cancel by carol: state %s, texts %v", g.state(t, b.ID), g.ch.texts())
		}
		g.send(t, msg("bob", "/cancel "+cb))
		rec, err := g.engine.Get(ctx, b.ID)
		if err != nil || rec.State != approval.StateCancelled || rec.DecidedBy != "bob" || !g.ch.hasText("answer", "Withdrawn: "+cb) {
			t.Fatalf("/cancel by bob: %+v, %v, texts %v", rec, err, g.ch.texts())
		}
		g.send(t, msg("bob", "/cancel "+cb))
		if !g.ch.hasText("answer", "No approval with the code "+cb) {
			t.Fatalf("/cancel of an ended approval: %v", g.ch.texts())
		}
		g.send(t, msg("bob", "/pending"))
		if !g.ch.hasText("answer", "Nothing waits for a decision in this chat.") {
			t.Fatalf("/pending with nothing: %v", g.ch.texts())
		}
		g.send(t, msg("bob", "/help"))
		if !g.ch.hasText("answer", "/revoke <n> or /revoke all") {
			t.Fatalf("/help: %v", g.ch.texts())
		}
		for _, text := range []string{"/pending", "/help", "/cancel " + cb, "确认 " + strings.ToUpper(ca), "确认"} {
			if g.model.Seen(text) != 0 {
				t.Fatalf("%q reached the model", text)
			}
		}
	})
}

// TestGrantCommands: /grants lists the session's live grants, numbered,
// with who approved and the time left; /revoke 1 ends the first, /revoke
// all the rest; on a shared store a grant revoked through one replica's
// router is gone for the other replica's policy, which asks again.
func TestGrantCommands(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		ga, gb := newReplicas(t, store)
		ctx := context.Background()
		sess := approval.SessionKey("fake:c1")
		mk := func(tool, hash, summary string, by approval.UserID, age time.Duration) approval.Grant {
			// The approval that granted it (not private): its record
			// says who may see and revoke the grant.
			a := storetest.NewApproval(t, sess)
			a.Channel, a.ChatID, a.Approvers = "fake", "c1", approval.ApproverRule{Mode: approval.ApproverRequester}
			if _, err := store.Put(ctx, a, approval.Outcome{Status: approval.StatusSuperseded}); err != nil {
				t.Fatal(err)
			}
			g := approval.Grant{Session: sess, User: "alice", Tool: tool, PayloadSHA256: hash, Summary: summary,
				ApprovalID: a.ID, ApprovedBy: by, ApprovedAt: time.Now().Add(-age), ExpiresAt: time.Now().Add(5*time.Minute - age)}
			if err := store.PutGrant(ctx, g, 5*time.Minute-age); err != nil {
				t.Fatal(err)
			}
			return g
		}
		ga.send(t, msg("alice", "/grants"))
		if !ga.ch.hasText("answer", "No live grants in this conversation") {
			t.Fatalf("/grants with none: %v", ga.ch.texts())
		}
		first := mk("tasks_add", "h1", "add a task: buy milk", "ou_zhang", 2*time.Minute)
		mk("tasks_done", "h2", "close task 7", "ou_li", time.Minute)
		ga.send(t, msg("alice", "/grants"))
		if !ga.ch.hasText("answer", "1. tasks_add: add a task: buy milk — approved by ou_zhang, ") ||
			!ga.ch.hasText("answer", "2. tasks_done: close task 7 — approved by ou_li, ") {
			t.Fatalf("/grants: %v", ga.ch.texts())
		}
		p, err := approval.NewPolicy(approval.PolicyConfig{Enabled: true, ConfidenceThreshold: 0.85, GrantWindow: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ci := approval.CallInfo{Session: sess, User: "alice", Tool: "tasks_add", Effect: approval.EffectWrite, Hash: "h1", Confidence: 1}
		if v, err := gb.engine.Evaluate(ctx, p, ci); err != nil || v.NeedsApproval || v.Grant == nil || v.Grant.ApprovedBy != "ou_zhang" {
			t.Fatalf("verdict with the grant = %+v, %v", v, err)
		}
		ga.send(t, msg("alice", "/revoke 3"))
		ga.send(t, msg("alice", "/revoke x"))
		if !ga.ch.hasText("answer", "There is no grant number 3 (there are 2)") || !ga.ch.hasText("answer", "Use /revoke <n>") {
			t.Fatalf("/revoke 3, /revoke x: %v", ga.ch.texts())
		}
		ga.send(t, msg("alice", "/revoke 1"))
		if !ga.ch.hasText("answer", "Revoked 1 grant(s)") {
			t.Fatalf("/revoke 1: %v", ga.ch.texts())
		}
		// The other replica's policy asks again.
		if v, err := gb.engine.Evaluate(ctx, p, ci); err != nil || !v.NeedsApproval || v.Grant != nil {
			t.Fatalf("verdict on the other replica after /revoke 1 = %+v, %v", v, err)
		}
		if got, _ := store.GrantFor(ctx, sess, first.Key()); got != nil {
			t.Fatal("the revoked grant is still in the store")
		}
		gb.send(t, msg("alice", "/grants"))
		if !gb.ch.hasText("answer", "1. tasks_done: close task 7") {
			t.Fatalf("/grants on the other replica: %v", gb.ch.texts())
		}
		gb.send(t, msg("alice", "/revoke all"))
		if !gb.ch.hasText("answer", "Revoked 1 grant(s)") {
			t.Fatalf("/revoke all: %v", gb.ch.texts())
		}
		if gs, _ := store.Grants(ctx, sess); len(gs) != 0 {
			t.Fatalf("grants left after /revoke all: %+v", gs)
		}
		if ga.model.Seen("/grants") != 0 || gb.model.Seen("/revoke all") != 0 {
			t.Fatal("a grant command reached the model")
		}
	})
}

// TestBareConfirmDecidesTheOnlyOneTheSenderMay: with per-user sessions
// and the default rule (the requester decides), two approvals wait in the
// chat but alice may decide only hers: her bare 确认 decides it, as before
// there were codes.
func TestBareConfirmDecidesTheOnlyOneTheSenderMay(t *testing.T) {
	g := newRig(t, nil, func(c *RouterConfig) { c.Scope = ScopePerUser })
	ctx := context.Background()
	ask := func(user approval.UserID) *approval.Approval {
		t.Helper()
		g.send(t, msg(user, "erase "+string(user)+"s"))
		var a *approval.Approval
		eventually(t, "an approval of "+string(user), func() bool {
			p, err := g.engine.Pending(ctx, approval.SessionKey("fake:c1:"+string(user)))
			if err != nil {
				t.Fatal(err)
			}
			a = p
			return p != nil
		})
		return a
	}
	a, b := ask("alice"), ask("bob")
	g.send(t, msg("alice", "确认"))
	g.drain()
	if g.state(t, a.ID) != approval.StateExecuted || g.state(t, b.ID) != approval.StatePending || g.ch.hasText("answer", "Several approvals wait") {
		t.Fatalf("alice's bare 确认: a %s, b %s, texts %v", g.state(t, a.ID), g.state(t, b.ID), g.ch.texts())
	}
}

// TestBareConfirmDecidesAnotherSessionsOnlyApproval: an approval of another
// session waits in the chat (another agent's request: package gate keys
// its approvals by agent), and the sender's own session has none: a bare
// 确认 by a person its rule allows decides it; one written before the
// approval existed does not.
func TestBareConfirmDecidesAnotherSessionsOnlyApproval(t *testing.T) {
	g := newRig(t, nil)
	ctx := context.Background()
	ask := func() *approval.Approval {
		t.Helper()
		a, err := g.engine.Request(ctx, approval.Request{Session: approval.AgentSession("fake:c1", "ci"), Channel: "fake", ChatID: "c1", Requester: "alice",
			Calls:   []approval.Call{{Tool: "erase", Args: json.RawMessage(`{"target":"build"}`), Summary: "erase build"}},
			Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh, Timeout: time.Minute}, Summary: "ci asks to erase build"})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := ask()
	old := msg("alice", "确认")
	old.CreatedAt = a.CreatedAt.Add(-time.Minute)
	g.send(t, old)
	g.drain()
	if st := g.state(t, a.ID); st != approval.StatePending {
		t.Fatalf("a 确认 written a minute before the approval: %s", st)
	}
	g.send(t, msg("mallory", "确认"))
	g.drain()
	if st := g.state(t, a.ID); st != approval.StatePending {
		t.Fatalf("mallory's 确认, whom the rule does not allow: %s", st)
	}
	g.send(t, msg("alice", "确认"))
	g.drain()
	eventually(t, "the approval executed", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
}

// revokeSteps are /revoke commands in a group, in order, on one grant of
// alice that an approval only bob may approve gave: an onlooker revokes
// nothing of it (and is told so), its approver or its grantee may.
var revokeSteps = []struct {
	who       approval.UserID
	text      string
	answer    string
	grantLeft bool
}{
	{"carol", "/revoke all", "Revoked 0 grant(s)", true},
	{"carol", "/revoke all", "1 grant(s) of others were left as they are", true},
	{"carol", "/revoke 1", "Grant 1 is not yours to revoke", true},
	{"bob", "/revoke 1", "Revoked 1 grant(s)", false},
	{"", "", "", false}, // the grant again
	{"carol", "/revoke all", "Revoked 0 grant(s)", true},
	{"alice", "/revoke all", "Revoked 1 grant(s)", false},
}

// TestRevokeOnlyWhoMay: /revoke acts only on the grants the sender may
// revoke (approval.GrantMayRevoke): the grantee's, or those of an approval
// the sender may decide.
func TestRevokeOnlyWhoMay(t *testing.T) {
	g := newRig(t, nil)
	ctx := context.Background()
	sess := approval.SessionKey("fake:c1")
	a := storetest.NewApproval(t, sess)
	a.Channel, a.ChatID, a.Approvers = "fake", "c1", approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob"}}
	if _, err := g.store.Put(ctx, a, approval.Outcome{Status: approval.StatusSuperseded}); err != nil {
		t.Fatal(err)
	}
	put := func() {
		gr := approval.Grant{Session: sess, User: "alice", Tool: "tasks_add", PayloadSHA256: "h1", Summary: "add a task",
			ApprovalID: a.ID, ApprovedBy: "bob", ApprovedAt: time.Now(), ExpiresAt: time.Now().Add(5 * time.Minute)}
		if err := g.store.PutGrant(ctx, gr, 5*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	put()
	for i, st := range revokeSteps {
		if st.text == "" {
			put()
			continue
		}
		g.ch.reset()
		g.send(t, msg(st.who, st.text))
		gs, err := g.store.Grants(ctx, sess)
		if err != nil {
			t.Fatal(err)
		}
		if !g.ch.hasText("answer", st.answer) || (len(gs) == 1) != st.grantLeft {
			t.Fatalf("step %d, %s's %q: %d grants left, answer %v", i, st.who, st.text, len(gs), g.ch.texts())
		}
	}
}

// TestStandingRuleCommands: an agent's standing rule allowed in a chat
// (approval.RulesSession) is listed by /grants there, after the chat's
// own grants, in words; /revoke of its number by an approver ends it in
// the store both replicas read, audited; someone who may not decide the
// approval that allowed it may not revoke it.
func TestStandingRuleCommands(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		ga, gb := newReplicas(t, store)
		ctx := context.Background()
		rules := approval.RulesSession("fake", "c1")
		a := storetest.NewApproval(t, approval.AgentSession("fake:c1", "ci-claude"))
		a.Channel, a.ChatID, a.Requester = "fake", "c1", "ou_req"
		a.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice"}}
		if _, err := store.Put(ctx, a, approval.Outcome{Status: approval.StatusSuperseded}); err != nil {
			t.Fatal(err)
		}
		st := approval.Standing{Session: rules, Agent: "ci-claude", Rules: []approval.PermissionRule{{ToolName: "Bash", RuleContent: "npm test:*"}}, Window: 720 * time.Hour}
		g := approval.Grant{Session: rules, User: "ou_req", Tool: "ci-claude/Bash", PayloadSHA256: st.Hash(), Summary: st.Words(), ApprovalID: a.ID,
			ApprovedBy: "alice", ApprovedAt: time.Now(), ExpiresAt: time.Now().Add(st.Window), Agent: st.Agent, Rules: st.Rules}
		if err := store.PutGrant(ctx, g, st.Window); err != nil {
			t.Fatal(err)
		}
		ga.send(t, msg("bob", "/grants"))
		if !ga.ch.hasText("answer", "1. always allow Bash(npm test:*) for ci-claude — allowed by alice, ") {
			t.Fatalf("/grants: %v", ga.ch.texts())
		}
		ga.send(t, msg("bob", "/revoke 1"))
		if !ga.ch.hasText("answer", "Grant 1 is not yours to revoke") {
			t.Fatalf("/revoke 1 by bob: %v", ga.ch.texts())
		}
		if gs, _ := store.Grants(ctx, rules); len(gs) != 1 {
			t.Fatalf("bob revoked it: %+v", gs)
		}
		gb.send(t, msg("alice", "/revoke 1"))
		if !gb.ch.hasText("answer", "Revoked 1 grant(s)") {
			t.Fatalf("/revoke 1 by alice: %v", gb.ch.texts())
		}
		if gs, _ := store.Grants(ctx, rules); len(gs) != 0 {
			t.Fatalf("rules after /revoke: %+v", gs)
		}
		ga.send(t, msg("bob", "/grants"))
		if !ga.ch.hasText("answer", "No live grants in this conversation") {
			t.Fatalf("/grants after /revoke: %v", ga.ch.texts())
		}
	})
}
