package cards_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/words"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const testID = approval.ID("ap_0123abcd_00112233445566778899aabbccddeeff")

// sample builds a pending HIGH approval of one call, or a batch.
func sample(t *testing.T, batch bool) *approval.Approval {
	t.Helper()
	created := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	calls := []approval.Call{{Tool: "sql_exec", Args: json.RawMessage(`{"database":"demo","sql":"DELETE FROM orders WHERE status = 'cancelled'"}`),
		Summary: "DELETE FROM orders WHERE status = 'cancelled' — affects 37 rows", CallID: "c1"}}
	calls[0].SummaryZH = "DELETE FROM orders WHERE status = 'cancelled' — 影响 demo 中的 37 行"
	summary, summaryZH := calls[0].Summary, calls[0].SummaryZH
	preview := "DELETE FROM orders WHERE status = 'cancelled'\n-- affects 37 rows of orders\n-- password: <redacted>"
	previewZH := "DELETE FROM orders WHERE status = 'cancelled'\n-- 影响 orders 的 37 行\n-- password: <redacted>"
	about := approval.Say(words.AboutSQLExecute)
	if batch {
		calls = append(calls,
			approval.Call{Tool: "http_post", Args: json.RawMessage(`{"body":{"text":"orders purged"},"url":"https://hooks.example/notify"}`), Summary: "POST https://hooks.example/notify", CallID: "c2"},
			approval.Call{Tool: "tasks_close", Args: json.RawMessage(`{"id":42}`), Summary: "close task #42 `cleanup`", CallID: "c3"})
		summary = "sql_exec: " + calls[0].Summary + "\nhttp_post: " + calls[1].Summary + "\ntasks_close: " + calls[2].Summary
		summaryZH = "sql_exec: " + calls[0].SummaryZH + "\nhttp_post: " + calls[1].Summary + "\ntasks_close: " + calls[2].Summary
		previewZH += "\n\nPOST https://hooks.example/notify\n{\"text\":\"orders purged\"}\n\nclose task #42 ```cleanup```"
		about = approval.Words{} // a batch's card lists its calls
		preview += "\n\nPOST https://hooks.example/notify\n{\"text\":\"orders purged\"}\n\nclose task #42 ```cleanup```"
	}
	for i := range calls {
		_, h, err := approval.HashCall(calls[i].Tool, calls[i].Args)
		if err != nil {
			t.Fatal(err)
		}
		calls[i].PayloadSHA256 = h
	}
	return &approval.Approval{
		ID: testID, Session: "web:alice/s1", Channel: "web", ChatID: "alice/s1", Requester: "alice",
		Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob", "carol"}, NotRequester: true},
		Calls:     calls, PayloadSHA256: approval.BatchHash(calls), Risk: approval.RiskHigh,
		Summary: summary, Preview: preview, Reason: "DELETE removes rows; affects 37 rows, more than 20", ReasonZH: "DELETE 会删除数据行；影响 37 行，超过 20 行",
		SummaryZH: summaryZH, PreviewZH: previewZH, About: about.EN, AboutZH: about.ZH,
		CreatedAt: created, ExpiresAt: created.Add(5 * time.Minute), State: approval.StatePending,
	}
}

// mcpSample is a pending HIGH approval of one MCP tool call of an
// untrusted server, with the reason the policy gives it.
func mcpSample(t *testing.T) *approval.Approval {
	t.Helper()
	a := sample(t, false)
	call := approval.Call{Tool: "fs__write_file", Args: json.RawMessage(`{"content":"hi","path":"/srv/share/a.txt"}`),
		Definition: "6b93e2799bd099fa7c1c6eb709c2aa185ca9b3bfeb86a80f380939e604b7c703", Summary: "fs · write_file", CallID: "c1"}
	call.PayloadSHA256 = call.Hash()
	a.Calls, a.PayloadSHA256 = []approval.Call{call}, call.PayloadSHA256
	a.Summary, a.SummaryZH, a.PreviewZH = call.Summary, "", ""
	a.About = "fs__write_file: a tool another program defines (over MCP). It describes itself as: Write a file."
	a.AboutZH = "fs__write_file：另一个程序（通过 MCP）提供的工具。它对自己的描述：Write a file."
	a.Preview = "fs · write_file\n{\n  \"content\": \"hi\",\n  \"path\": \"/srv/share/a.txt\"\n}"
	v, err := mcpPolicy(t).Evaluate(approval.CallInfo{Tool: call.Tool, Effect: approval.EffectDestructive, Confidence: 1,
		EffectSource: approval.Say(words.MCPRiskUntrusted, "fs")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Reason, a.ReasonZH = v.Reason, v.ReasonZH
	return a
}

// agentSample is a pending HIGH approval of another agent's call (package
// gate): one call named "<agent>/<tool>", in the approvers' chat.
func agentSample(t *testing.T) *approval.Approval {
	t.Helper()
	a := sample(t, false)
	call := approval.Call{Tool: "ci-claude/Bash", Args: json.RawMessage(`{"command":"git push --force origin main"}`), CallID: "toolu_01"}
	_, h, err := approval.HashCall(call.Tool, call.Args)
	if err != nil {
		t.Fatal(err)
	}
	call.PayloadSHA256 = h
	call.Summary = words.In("en", words.GateAsks, "ci-claude", "Bash: git push --force origin main")
	a.Calls, a.PayloadSHA256 = []approval.Call{call}, h
	a.Session, a.Channel, a.ChatID, a.Requester = "feishu:oc_ops", "feishu", "oc_ops", "ou_alice"
	a.Summary, a.Preview = call.Summary, "git push --force origin main"
	// The gate says the card's words in both languages (gate.Ask).
	call.SummaryZH = words.In("zh", words.GateAsks, "ci-claude", "Bash: git push --force origin main")
	a.Calls[0] = call
	about := approval.Say(words.AboutGate, "ci-claude")
	a.SummaryZH, a.PreviewZH, a.About, a.AboutZH = call.SummaryZH, "", about.EN, about.ZH
	a.Reason = "HIGH risk (destructive); " + words.In("en", words.GateRiskPattern, "ci-claude", "Bash(rm *)|Bash(git push*)")
	a.ReasonZH = "高风险（破坏性操作）；" + words.In("zh", words.GateRiskPattern, "ci-claude", "Bash(rm *)|Bash(git push*)")
	return a
}

func mcpPolicy(t *testing.T) *approval.Policy {
	p, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type golden struct {
	name string
	lang string
	view cards.View
}

func goldenCases(t *testing.T) []golden {
	one, batch := sample(t, false), sample(t, true)
	zh, en := approval.DefaultOutcomeText("zh"), approval.DefaultOutcomeText("en")
	// Outcomes as the engine words them: a status that did not execute
	// has Content "<status sentence>: <detail>" and Detail the detail (an
	// executed one its result); the card says the sentence once.
	final := func(name, lang string, st approval.Status, by approval.UserID, detail, comment string) golden {
		text := en
		if lang == "zh" {
			text = zh
		}
		o := approval.Outcome{Status: st, DecidedBy: by, Content: text[st], Detail: detail}
		switch {
		case st == approval.StatusExecuted:
			o.Content, o.Detail = detail, ""
		case st == approval.StatusAlreadyDecided:
			o.Content += " (" + detail + ")"
		case detail != "":
			o.Content += ": " + detail
		}
		a := one.Clone()
		a.DecidedBy, a.Comment = by, comment
		return golden{name, lang, cards.Final(a, o, text, lang)}
	}
	mcpCall := mcpSample(t)
	// The server changed the tool between the card and the click: the
	// engine's outcome, as it words it.
	changed := func(lang string) golden {
		text := en
		if lang == "zh" {
			text = zh
		}
		detail := words.In(lang, words.NotRunToolChanged, "fs__write_file")
		o := approval.Outcome{Status: approval.StatusFailed, DecidedBy: "bob", Content: text[approval.StatusFailed] + ": " + detail, Detail: detail}
		a := mcpCall.Clone()
		a.DecidedBy = "bob"
		return golden{"final_mcp_tool_changed_" + lang, lang, cards.Final(a, o, text, lang)}
	}
	agentCall := agentSample(t)
	// Another agent's MEDIUM call whose card offers a standing rule
	// (Claude Code's suggestion Bash(npm test:*)): a third approve button.
	always := func(lang string, text approval.OutcomeText) golden {
		a := agentCall.Clone()
		a.Risk, a.GrantWindow = approval.RiskMedium, 5*time.Minute
		a.Reason, a.ReasonZH = "MEDIUM risk (write)", "中风险（写操作）"
		a.Standing = &approval.Standing{Session: approval.RulesSession("feishu", "oc_ops"), Agent: "ci-claude",
			Rules: []approval.PermissionRule{{ToolName: "Bash", RuleContent: "npm test:*"}}, Window: 720 * time.Hour}
		v := cards.Pending(a, text, lang)
		v.Code = approval.ShortCode(a.ID, 0)
		return golden{"pending_agent_always_" + lang, lang, v}
	}
	allowed := func(lang string) golden {
		text := en
		if lang == "zh" {
			text = zh
		}
		o := approval.Outcome{Status: approval.StatusExecuted, DecidedBy: "ou_alice", Content: "allowed: ci-claude runs it"}
		a := agentCall.Clone()
		a.DecidedBy = "ou_alice"
		return golden{"final_agent_allowed_" + lang, lang, cards.Final(a, o, text, lang)}
	}
	// A frozen approval resolved by carol, as the engine words each
	// resolution's outcome (approval/resolve.go).
	resolved := func(lang string, r approval.Resolution, st approval.Status, comment string) golden {
		text := en
		if lang == "zh" {
			text = zh
		}
		o := approval.Outcome{Status: st, DecidedBy: "carol", Resolution: r, Comment: comment}
		switch r {
		case approval.ResolveDone:
			o.Content = words.In(lang, words.OutcomeResolvedDone, "carol") + ": " + comment
		case approval.ResolveAbandon:
			o.Detail = words.In(lang, words.OutcomeResolvedAbandon, "carol") + ": " + comment
			o.Content, o.IsError = text[st]+": "+o.Detail, true
		case approval.ResolveRetry:
			o.Content = "DELETE 37\n37 rows deleted from orders"
			if st == approval.StatusFrozen {
				o.Detail = words.In(lang, words.FrozenTimeout, "2m0s")
				o.Content, o.IsError = text[st]+": "+o.Detail, true
			}
		}
		a := one.Clone()
		a.DecidedBy, a.Comment = "carol", comment
		name := "resolved_" + string(r)
		if r == approval.ResolveRetry && st == approval.StatusFrozen {
			name += "_frozen"
		}
		return golden{name + "_" + lang, lang, cards.Final(a, o, text, lang)}
	}
	// A MEDIUM approval that may grant the window: two approve buttons
	// (仅本次 / 本会话允许), and the short code the router puts on it.
	medium := func(lang string, text approval.OutcomeText) golden {
		a := one.Clone()
		a.Risk, a.GrantWindow = approval.RiskMedium, 5*time.Minute
		a.Reason, a.ReasonZH = "MEDIUM risk (write): asks the first time; approving allows it for 5m", "中风险（写操作）：第一次询问；批准后 5m 内不再询问"
		v := cards.Pending(a, text, lang)
		v.Code = approval.ShortCode(a.ID, 0)
		return golden{"pending_medium_grant_" + lang, lang, v}
	}
	// A per-call decision on the batch: calls 1 and 3 ran, bob declined
	// call 2 with a reason.
	perCall := func(lang string) golden {
		text := en
		if lang == "zh" {
			text = zh
		}
		o := approval.Outcome{Status: approval.StatusExecuted, DecidedBy: "bob", Comment: "no webhook today",
			Content: "[1] sql_exec (executed): DELETE 37\n[2] http_post (rejected): bob (\"no webhook today\")\n[3] tasks_close (executed): closed #42",
			Results: []approval.Result{
				{Tool: "sql_exec", CallID: "c1", Status: approval.StatusExecuted, Content: "DELETE 37"},
				{Tool: "http_post", CallID: "c2", Status: approval.StatusRejected, IsError: true, Content: `bob ("no webhook today")`},
				{Tool: "tasks_close", CallID: "c3", Status: approval.StatusExecuted, Content: "closed #42"},
			}}
		a := batch.Clone()
		a.DecidedBy, a.Comment, a.Verdicts = "bob", "no webhook today", "ara"
		return golden{"final_percall_" + lang, lang, cards.Final(a, o, text, lang)}
	}
	// An approver changed the statement before approving it.
	edited := func(lang string) golden {
		text := en
		if lang == "zh" {
			text = zh
		}
		a := one.Clone()
		a.Calls[0].Args = json.RawMessage(`{"database":"demo","sql":"DELETE FROM orders WHERE status = 'cancelled' LIMIT 10"}`)
		a.Calls[0].Edited = `sql: "DELETE FROM orders WHERE status = 'cancelled'" → "DELETE FROM orders WHERE status = 'cancelled' LIMIT 10"`
		a.Calls[0].PayloadSHA256 = approval.PayloadHash("sql_exec", a.Calls[0].Args)
		a.ProposedSHA256, a.PayloadSHA256 = a.PayloadSHA256, a.Calls[0].PayloadSHA256
		a.DecidedBy, a.Comment = "bob", "ten at a time"
		o := approval.Outcome{Status: approval.StatusExecuted, DecidedBy: "bob", Content: "DELETE 10",
			Results: []approval.Result{{Tool: "sql_exec", CallID: "c1", Status: approval.StatusExecuted, Content: "DELETE 10", Edited: a.Calls[0].Edited}}}
		return golden{"final_edited_" + lang, lang, cards.Final(a, o, text, lang)}
	}
	// A card in the configured time zone (approval.time_zone), of a
	// requester whose platform gave their name (DingTalk's senderNick).
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	named := func(lang string) golden {
		a := one.Clone()
		a.Channel, a.ChatID, a.Requester, a.RequesterName = "dingtalk", "cid_ops", "staff_0421", "张三"
		v := cards.Pending(a, zh, lang)
		if lang == "en" {
			v = cards.Pending(a, en, lang)
		}
		v.Zone = shanghai
		return golden{"pending_named_shanghai_" + lang, lang, v}
	}
	// A quorum of 2 of 3 DBAs, one of whom has approved; and its end.
	quorum := func(lang string, final bool) golden {
		a := one.Clone()
		a.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"ou_dbali", "ou_dbawang", "ou_dbazhao"}, Quorum: 2, NotRequester: true}
		a.Votes = []approval.Vote{{By: "ou_dbali", Via: approval.SourceCard, At: a.CreatedAt.Add(time.Minute)}}
		text := en
		if lang == "zh" {
			text = zh
		}
		if !final {
			return golden{"pending_quorum_" + lang, lang, cards.Pending(a, text, lang)}
		}
		a.Votes = append(a.Votes, approval.Vote{By: "ou_dbazhao", Via: approval.SourceCard, At: a.CreatedAt.Add(2 * time.Minute)})
		a.DecidedBy = "ou_dbazhao"
		o := approval.Outcome{Status: approval.StatusExecuted, DecidedBy: "ou_dbazhao", Content: "DROP TABLE"}
		return golden{"final_quorum_" + lang, lang, cards.Final(a, o, text, lang)}
	}
	// The status card of the requester's chat while the approval waits in
	// the approvers' chat (approve_in): no buttons, one line saying where.
	waiting := func(lang string) golden {
		a := one.Clone()
		a.Approvers = approval.ApproverRule{Mode: approval.ApproverChat}
		a.ApproveIn = &approval.Place{Channel: "feishu", ChatID: "oc_ops"}
		text := en
		if lang == "zh" {
			text = zh
		}
		return golden{"waiting_approve_in_" + lang, lang, cards.Waiting(a, text, lang)}
	}
	// An approval nobody decided within 10 minutes: its first step asked
	// the on-call chat, where ou_oncall may decide too.
	escalated := func(lang string) golden {
		a := one.Clone()
		a.Escalation = []approval.Escalation{{After: 10 * time.Minute, To: approval.Place{Channel: "feishu", ChatID: "oc_oncall"},
			Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"ou_oncall"}}}}
		a.Escalated = 1
		text := en
		if lang == "zh" {
			text = zh
		}
		return golden{"pending_escalated_" + lang, lang, cards.Pending(a, text, lang)}
	}
	// A private approval in a group chat as its onlookers see it:
	// pending, executed, and rejected with a comment.
	redacted := func(name, lang string, st approval.Status) golden {
		text := en
		if lang == "zh" {
			text = zh
		}
		a := one.Clone()
		a.Channel, a.ChatID, a.Requester, a.RequesterName = "feishu", "oc_group", "ou_zhang", "张三"
		a.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"ou_li"}}
		a.Privacy, a.Group = approval.PrivacyGroup, true
		switch st {
		case approval.StatusExecuted:
			a.DecidedBy = "ou_li"
			o := approval.Outcome{Status: st, DecidedBy: "ou_li", Content: "DELETE 37\n37 rows deleted from orders"}
			return golden{name, lang, cards.Redact(cards.Final(a, o, text, lang))}
		case approval.StatusRejected:
			a.DecidedBy, a.Comment = "ou_li", "not the orders table"
			o := approval.Outcome{Status: st, DecidedBy: "ou_li", Content: text[st] + ": ou_li (\"not the orders table\")", Detail: `ou_li ("not the orders table")`}
			return golden{name, lang, cards.Redact(cards.Final(a, o, text, lang))}
		}
		a.Requester, a.RequesterName = "staff_0421", "张三" // a DingTalk requester: named, not mentioned
		return golden{name, lang, cards.Redact(cards.Pending(a, text, lang))}
	}
	return append(questionGolden(t), []golden{
		escalated("en"),
		escalated("zh"),
		redacted("redacted_pending_zh", "zh", ""),
		redacted("redacted_pending_en", "en", ""),
		redacted("redacted_executed_zh", "zh", approval.StatusExecuted),
		redacted("redacted_executed_en", "en", approval.StatusExecuted),
		redacted("redacted_rejected_zh", "zh", approval.StatusRejected),
		redacted("redacted_rejected_en", "en", approval.StatusRejected),
		waiting("en"),
		waiting("zh"),
		quorum("en", false),
		quorum("zh", false),
		quorum("en", true),
		quorum("zh", true),
		named("zh"),
		named("en"),
		resolved("en", approval.ResolveDone, approval.StatusExecuted, "row 7 was already gone; checked in the console"),
		resolved("zh", approval.ResolveDone, approval.StatusExecuted, "已在控制台核对，数据已删除"),
		resolved("en", approval.ResolveRetry, approval.StatusExecuted, ""),
		resolved("zh", approval.ResolveRetry, approval.StatusExecuted, ""),
		resolved("en", approval.ResolveRetry, approval.StatusFrozen, ""),
		resolved("zh", approval.ResolveRetry, approval.StatusFrozen, ""),
		resolved("en", approval.ResolveAbandon, approval.StatusFailed, "not needed any more"),
		resolved("zh", approval.ResolveAbandon, approval.StatusFailed, "不再需要"),
		medium("en", en),
		medium("zh", zh),
		{"pending_agent_en", "en", cards.Pending(agentCall, en, "en")},
		{"pending_agent_zh", "zh", cards.Pending(agentCall, zh, "zh")},
		always("en", en),
		always("zh", zh),
		allowed("en"),
		allowed("zh"),
		{"pending_mcp_untrusted_en", "en", cards.Pending(mcpCall, en, "en")},
		{"pending_mcp_untrusted_zh", "zh", cards.Pending(mcpCall, zh, "zh")},
		changed("en"),
		changed("zh"),
		{"pending_high_zh", "zh", cards.Pending(one, zh, "zh")},
		{"pending_high_en", "en", cards.Pending(one, en, "en")},
		{"pending_batch_en", "en", cards.Pending(batch, en, "en")},
		{"pending_batch_zh", "zh", cards.Pending(batch, zh, "zh")},
		perCall("en"),
		perCall("zh"),
		edited("en"),
		edited("zh"),
		final("final_executed_zh", "zh", approval.StatusExecuted, "bob", "DELETE 37\n37 rows deleted from orders", ""),
		final("final_executed_en", "en", approval.StatusExecuted, "bob", "DELETE 37\n37 rows deleted from orders", ""),
		final("final_rejected_en", "en", approval.StatusRejected, "carol", `carol ("not during business hours")`, "not during business hours"),
		final("final_expired_en", "en", approval.StatusExpired, "", "", ""),
		final("final_frozen_en", "en", approval.StatusFrozen, "bob", "timed out after 2m0s", ""),
		final("final_frozen_zh", "zh", approval.StatusFrozen, "bob", "执行超时（2m0s）", ""),
		final("final_failed_zh", "zh", approval.StatusFailed, "bob", "ERROR: permission denied for table orders", ""),
		final("final_superseded_en", "en", approval.StatusSuperseded, "", "", ""),
		final("final_already_decided_zh", "zh", approval.StatusAlreadyDecided, "bob", "executed", ""),
		final("final_cancelled_en", "en", approval.StatusCancelled, "alice", "cancelled through the API", ""),
	}...)
}

// TestGolden compares Markdown, Text and WebJSON of every case with
// testdata/<case>.{md,txt,json}.golden; `go test ./cards -update` rewrites them.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			js, err := cards.WebJSON(c.view)
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, js, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			for ext, got := range map[string]string{
				"md":   cards.Markdown(c.view, c.lang),
				"txt":  cards.Text(c.view, c.lang),
				"json": pretty.String(),
			} {
				path := filepath.Join("testdata", c.name+"."+ext+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./cards -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
				}
			}
		})
	}
}

func TestPendingShowsTheFacts(t *testing.T) {
	v := cards.Pending(sample(t, false), approval.DefaultOutcomeText("en"), "en")
	for _, out := range []string{cards.Markdown(v, "en"), cards.Text(v, "en")} {
		for _, want := range []string{"HIGH", "sql_exec", "affects 37 rows", "alice", "only bob, carol", "Requested by alice · valid until 09:05 UTC", v.ShortHash, "<redacted>"} {
			if !strings.Contains(out, want) {
				t.Errorf("missing %q in\n%s", want, out)
			}
		}
		// Arguments beyond the sanitised preview are never printed.
		if strings.Contains(out, `"database"`) {
			t.Errorf("raw arguments in\n%s", out)
		}
	}
}

func TestMarkdownCannotBeInjected(t *testing.T) {
	a := sample(t, false)
	a.Summary = "see [here](https://evil.example) **now** <img src=x>"
	a.Preview = "```\n# not a heading\n```"
	a.Requester = "eve`"
	md := cards.Markdown(cards.Pending(a, nil, "en"), "en")
	if strings.Contains(md, "[here](") || strings.Contains(md, "**now**") || !strings.Contains(md, `\<img`) {
		t.Errorf("summary not escaped:\n%s", md)
	}
	// The preview's own fence must not close the block: the block's fence is longer.
	if !strings.Contains(md, "````\n```\n# not a heading\n```\n````\n") {
		t.Errorf("preview not fenced safely:\n%s", md)
	}
}

func TestFinalHasNoButtonsOrHowTo(t *testing.T) {
	a := sample(t, false)
	v := cards.Final(a, approval.Outcome{Status: approval.StatusRejected, DecidedBy: "bob"}, approval.DefaultOutcomeText("zh"), "zh")
	md := cards.Markdown(v, "zh")
	if strings.Contains(md, "回复") || !strings.Contains(md, "已取消，未执行") || !strings.Contains(md, "处理人: bob") {
		t.Errorf("final markdown:\n%s", md)
	}
	js, err := cards.WebJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js, []byte(`"approve"`)) || !bytes.Contains(js, []byte(`"final":true`)) {
		t.Errorf("final web json: %s", js)
	}
}

func TestWebJSONRejectsBadArgs(t *testing.T) {
	v := cards.Pending(sample(t, false), nil, "en")
	v.Calls[0].Args = json.RawMessage(`{"a":`)
	if _, err := cards.WebJSON(v); err == nil {
		t.Fatal("WebJSON accepted arguments that are not JSON")
	}
}

// TestReasonInTheCardsLanguage: the "why" line is the policy's reason in
// the card's language, English when the record has no Chinese one (a
// record written before reasons had one).
func TestReasonInTheCardsLanguage(t *testing.T) {
	a := sample(t, false)
	for _, tc := range []struct{ lang, zh, want string }{
		{"zh", a.ReasonZH, "原因: DELETE 会删除数据行；影响 37 行，超过 20 行"},
		{"en", a.ReasonZH, "Why: DELETE removes rows; affects 37 rows, more than 20"},
		{"zh", "", "原因: DELETE removes rows; affects 37 rows, more than 20"},
	} {
		b := a.Clone()
		b.ReasonZH = tc.zh
		v := cards.Pending(b, nil, tc.lang)
		for _, out := range []string{cards.Markdown(v, tc.lang), cards.Text(v, tc.lang)} {
			if !strings.Contains(out, tc.want) {
				t.Errorf("%s card (zh reason %q) lacks %q:\n%s", tc.lang, tc.zh, tc.want, out)
			}
		}
	}
}

// TestRedactedSaysNothingOfTheCall: every rendering of a redacted view
// (Markdown, text, web JSON, Feishu, DingTalk data and markdown), pending
// and final, holds none of what the call is: tool, statement, preview,
// reason, result, comment, payload hash or short code; and no button.
func TestRedactedSaysNothingOfTheCall(t *testing.T) {
	for _, c := range goldenCases(t) {
		if !strings.HasPrefix(c.name, "redacted_") {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			js, err := cards.WebJSON(c.view)
			if err != nil {
				t.Fatal(err)
			}
			feishu, err := json.Marshal(cards.FeishuCard(c.view, c.lang))
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(cards.DingTalkCardData(c.view, c.lang))
			if err != nil {
				t.Fatal(err)
			}
			a := sample(t, false)
			for _, out := range []string{cards.Markdown(c.view, c.lang), cards.Text(c.view, c.lang), string(js), string(feishu), string(data),
				cards.DingTalkMarkdown(c.view, c.lang, true)} {
				for _, secret := range []string{"sql_exec", "DELETE", "orders", "cancelled", "redacted>", "37", a.PayloadSHA256, approval.ShortHash(a.PayloadSHA256),
					"not the orders table", "\"approve\"", `"tag":"button"`, `"buttons":"true"`, approval.ShortCode(a.ID, 0)} {
					if strings.Contains(out, secret) {
						t.Errorf("%q in\n%s", secret, out)
					}
				}
				if !strings.Contains(out, "张三") && !strings.Contains(out, "ou_zhang") {
					t.Errorf("the requester is not named in\n%s", out)
				}
			}
		})
	}
}
