package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// The team features (timed escalation, a quorum's progress, approve_in,
// privacy in groups) end to end through the real `bot serve`, configured
// by a YAML file as an operator writes it, with the Feishu channel on the
// long connection to the fake Feishu. Whatever serve wraps around the
// router (the metrics notifier) is in the way here as in production.

// teamSeq keeps the tests' Feishu app ids apart: the SDK's token cache is
// process-global, keyed by app id and secret.
var teamSeq atomic.Int64

// teamServer is a running `bot serve` with Feishu on and its fake.
type teamServer struct {
	*server
	fake *feishutest.Server
	data string
}

// serveTeam writes a config file with the Feishu channel on (to a new
// fake) and approvalYAML as its approval section (indented under
// "approval:"), with the Redis store when withRedis, and runs serve with it.
func serveTeam(t *testing.T, approvalYAML string, withRedis bool) *teamServer {
	t.Helper()
	fake := feishutest.New()
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	secret := filepath.Join(dir, "app_secret")
	if err := os.WriteFile(secret, []byte("s3cret-not-logged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := "store:\n  backend: memory\n"
	if withRedis {
		client, prefix := testredis.Start(t)
		// After the server's shutdown (registered later, run earlier):
		// every key it wrote is of a documented family.
		t.Cleanup(func() { keysDocumented(t, client, prefix) })
		store = fmt.Sprintf("store:\n  backend: redis\n  redis:\n    url: %q\n    prefix: %q\n", redisURL(t, client), prefix)
	}
	cfg := store + fmt.Sprintf(`channels:
  feishu:
    enabled: true
    app_id: cli_team_%d_%d
    app_secret_file: %q
    base_url: %q
    lang: en
approval:
  lang: en
%s`, time.Now().UnixNano(), teamSeq.Add(1), secret, fake.URL, approvalYAML)
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	s := serve(t, "-config", file, "-data", data)
	waitFor(t, 30*time.Second, "the long connection", fake.Connected)
	return &teamServer{server: s, fake: fake, data: data}
}

// say sends text from user in chat (p2p or group; a group message
// mentions the bot).
func (ts *teamServer) say(t *testing.T, chatType, chat, user, text string) {
	t.Helper()
	ev := feishutest.MessageEvent{EventID: fmt.Sprintf("ev_%d", teamSeq.Add(1)), MessageID: fmt.Sprintf("om_user_%d", teamSeq.Add(1)),
		ChatID: chat, ChatType: chatType, Sender: user, Text: text}
	if chatType == "group" {
		ev.Text = "@_user_1 " + text
		ev.Mentions = map[string]string{"@_user_1": ts.fake.BotOpenID}
	}
	if _, err := ts.fake.Push(ev.JSON(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// click pushes a click on the button verb of card by user in chat and
// returns the callback's answer.
func (ts *teamServer) click(t *testing.T, card feishutest.Call, chat, user, verb string) string {
	t.Helper()
	resp, err := ts.fake.Push(feishutest.CardActionEvent{EventID: fmt.Sprintf("ev_click_%d", teamSeq.Add(1)), Operator: user,
		MessageID: card.Sent, ChatID: chat, Value: buttonValue(t, card.Content, verb)}.JSON(), 5*time.Second)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("click ack %+v, %v", resp, err)
	}
	return string(resp.Data)
}

// created returns the messages created in chat (a chat id, or an open_id
// for a 1:1 message) of msgType whose content says sub.
func (ts *teamServer) created(chat, msgType, sub string) []feishutest.Call {
	var out []feishutest.Call
	for _, c := range ts.fake.Calls() {
		if c.Op == "create" && c.Answered == http.StatusOK && c.ReceiveID == chat && c.MsgType == msgType && strings.Contains(c.Content, sub) {
			out = append(out, c)
		}
	}
	return out
}

// card waits for the one card with buttons created in chat.
func (ts *teamServer) card(t *testing.T, chat string) feishutest.Call {
	t.Helper()
	var card feishutest.Call
	waitFor(t, 20*time.Second, "a card with buttons in "+chat, func() bool {
		got := ts.created(chat, "interactive", `"decision":"approve"`)
		if len(got) > 1 {
			t.Fatalf("%d cards with buttons in %s, want one: %+v", len(got), chat, got)
		}
		if len(got) == 1 {
			card = got[0]
		}
		return len(got) == 1
	})
	return card
}

// patchedWith reports whether card was patched to content saying every
// one of subs.
func (ts *teamServer) patchedWith(card feishutest.Call, subs ...string) bool {
	for _, c := range ts.fake.Calls() {
		if c.Op != "patch" || c.Answered != http.StatusOK || c.MessageID != card.Sent {
			continue
		}
		all := true
		for _, s := range subs {
			all = all && strings.Contains(c.Content, s)
		}
		if all {
			return true
		}
	}
	return false
}

// settled waits until every card is patched to its final state: the
// statement's result and no buttons.
func (ts *teamServer) settled(t *testing.T, result string, cards ...feishutest.Call) {
	t.Helper()
	for _, card := range cards {
		waitFor(t, 20*time.Second, "card "+card.Sent+" settled", func() bool {
			for _, c := range ts.fake.Calls() {
				if c.Op == "patch" && c.Answered == http.StatusOK && c.MessageID == card.Sent && strings.Contains(c.Content, result) &&
					!strings.Contains(c.Content, `"decision":"approve"`) {
					return true
				}
			}
			return false
		})
	}
}

// events stops the server and counts the audit trail's records of each
// event.
func (ts *teamServer) events(t *testing.T) map[audit.Event]int {
	t.Helper()
	ts.shutdown(t)
	recs, err := audit.ReadFile(filepath.Join(ts.data, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := map[audit.Event]int{}
	for _, r := range audit.Dedupe(recs) {
		n[r.Event]++
	}
	return n
}

// escalationYAML: HIGH calls escalate after 2s (well after the card is
// out) to the on-call chat, where ou_oncall may decide too; the sweep,
// which takes the steps, runs every 50ms.
const escalationYAML = `  sweep_interval: 50ms
  policy:
    escalation:
      high:
        - after: 2s
          to: {channel: feishu, chat_id: oc_oncall}
          approvers: {mode: users, users: [ou_oncall]}
`

// TestServeEscalation: nobody decides the demo's HIGH DELETE within the
// escalation's time: the on-call chat gets the approval's card with its
// buttons, the waiting chat is told where else it was asked, and the
// on-call person's click runs the statement once and settles both cards.
// On the memory store and on Redis.
func TestServeEscalation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
	}{{"memory", false}, {"redis", true}} {
		t.Run(tc.name, func(t *testing.T) { testServeEscalation(t, tc.redis) })
	}
}

func testServeEscalation(t *testing.T, withRedis bool) {
	ts := serveTeam(t, escalationYAML, withRedis)
	ts.say(t, "p2p", "oc_alice", "ou_alice", deleteCancelled)
	mine := ts.card(t, "oc_alice")
	if !strings.Contains(mine.Content, "affects 7 rows") {
		t.Fatalf("the requester's card: %s", mine.Content)
	}

	oncall := ts.card(t, "oc_oncall")
	if !strings.Contains(oncall.Content, "affects 7 rows") || !strings.Contains(oncall.Content, "also asked in oc_oncall") {
		t.Fatalf("the on-call card: %s", oncall.Content)
	}
	waitFor(t, 20*time.Second, "the waiting chat told", func() bool {
		return len(ts.created("oc_alice", "text", "also asked in oc_oncall; ou_oncall may decide too")) == 1
	})

	ts.click(t, oncall, "oc_oncall", "ou_oncall", "approve")
	ts.settled(t, "7 rows affected", mine, oncall)
	ev := ts.events(t)
	if ev[audit.EventEscalate] != 1 || ev[audit.EventConfirm] != 1 || ev[audit.EventExecute] != 1 {
		t.Fatalf("audit events %v: want one escalate, one confirm, one execute", ev)
	}
	if n := len(ts.created("oc_oncall", "interactive", "")); n != 1 {
		t.Fatalf("the on-call chat got %d cards, want one", n)
	}
}

// TestServeQuorumProgress: HIGH needs 2 of ou_dba1, ou_dba2. After the
// first approval the card is redrawn with the progress and keeps its
// buttons; the second runs the statement once.
func TestServeQuorumProgress(t *testing.T) {
	ts := serveTeam(t, `  policy:
    approvers:
      high: {mode: users, users: [ou_dba1, ou_dba2], quorum: 2}
`, false)
	ts.say(t, "p2p", "oc_alice", "ou_alice", deleteCancelled)
	card := ts.card(t, "oc_alice")
	if !strings.Contains(card.Content, "2 of them must approve") {
		t.Fatalf("the card does not say the quorum: %s", card.Content)
	}

	ts.click(t, card, "oc_alice", "ou_dba1", "approve")
	waitFor(t, 20*time.Second, "the card redrawn with the progress", func() bool {
		return ts.patchedWith(card, "1/2 approved", `"decision":"approve"`)
	})
	ts.click(t, card, "oc_alice", "ou_dba2", "approve")
	ts.settled(t, "7 rows affected", card)
	ev := ts.events(t)
	if ev[audit.EventVote] != 1 || ev[audit.EventConfirm] != 1 || ev[audit.EventExecute] != 1 {
		t.Fatalf("audit events %v: want one vote, one confirm, one execute", ev)
	}
}

// TestServeApproveIn: with approve_in, the card with its buttons goes to
// the approvers' chat and the requester's chat gets the status card; a
// click in the approvers' chat runs the statement once and settles both.
func TestServeApproveIn(t *testing.T) {
	ts := serveTeam(t, `  policy:
    approvers:
      high: {mode: chat}
    approve_in:
      high: {channel: feishu, chat_id: oc_ops}
`, false)
	ts.say(t, "p2p", "oc_alice", "ou_alice", deleteCancelled)
	ops := ts.card(t, "oc_ops")
	var status feishutest.Call
	waitFor(t, 20*time.Second, "the status card in the requester's chat", func() bool {
		got := ts.created("oc_alice", "interactive", "Waiting for approval in the approvers' chat")
		if len(got) == 1 {
			status = got[0]
		}
		return len(got) == 1
	})
	if strings.Contains(status.Content, `"decision":"approve"`) {
		t.Fatalf("the status card has buttons: %s", status.Content)
	}
	ts.click(t, ops, "oc_ops", "ou_carol", "approve")
	ts.settled(t, "7 rows affected", ops)
	ts.settled(t, "Executed", status)
	if ev := ts.events(t); ev[audit.EventExecute] != 1 {
		t.Fatalf("audit events %v: want one execute", ev)
	}
}

// TestServePrivacyInGroup: a HIGH call asked in a group with privacy
// group, which only ou_bob may approve: the group gets the redacted card,
// ou_alice and ou_bob the whole card 1:1; ou_bob's click there runs the
// statement once.
func TestServePrivacyInGroup(t *testing.T) {
	ts := serveTeam(t, `  policy:
    approvers:
      high: {mode: users, users: [ou_bob]}
    privacy:
      high: group
`, false)
	ts.say(t, "group", "oc_group", "ou_alice", deleteCancelled)
	var group feishutest.Call
	waitFor(t, 20*time.Second, "the redacted card in the group", func() bool {
		got := ts.created("oc_group", "interactive", "asked for a HIGH risk action")
		if len(got) == 1 {
			group = got[0]
		}
		return len(got) == 1
	})
	for _, secret := range []string{"orders", "cancelled", `"decision"`} {
		if strings.Contains(group.Content, secret) {
			t.Fatalf("the group's card says %q: %s", secret, group.Content)
		}
	}
	whole := map[string]feishutest.Call{}
	for _, who := range []string{"ou_alice", "ou_bob"} {
		whole[who] = ts.card(t, who)
		if !strings.Contains(whole[who].Content, "affects 7 rows") {
			t.Fatalf("%s's 1:1 card: %s", who, whole[who].Content)
		}
	}
	ts.click(t, whole["ou_bob"], feishutest.P2PChat("ou_bob"), "ou_bob", "approve")
	ts.settled(t, "7 rows affected", whole["ou_alice"], whole["ou_bob"])
	ts.settled(t, "Executed", group)
	if ev := ts.events(t); ev[audit.EventExecute] != 1 {
		t.Fatalf("audit events %v: want one execute", ev)
	}
}
