package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/internal/waitfor"
	"github.com/hitlbot/hitlbot/words"
)

// langs are the ways a request comes to speak a language: the API's
// configured Lang, and the request's Accept-Language, which wins when it
// names a language of the catalogue.
var langs = []struct {
	name   string
	cfg    string // api.Config.Lang
	accept string // the Accept-Language header
	want   words.Lang
}{
	{"default", "", "", words.EN},
	{"config en", "en", "", words.EN},
	{"config zh", "zh", "", words.ZH},
	{"config zh-CN", "zh-CN", "", words.ZH},
	{"header zh-CN over config en", "en", "zh-CN,zh;q=0.9,en;q=0.8", words.ZH},
	{"header en-US over config zh", "zh", "en-US", words.EN},
	{"header by weight", "en", "en;q=0.5, zh;q=0.9", words.ZH},
	{"header q=0 refuses", "en", "zh;q=0, en", words.EN},
	{"header unknown: config", "zh", "fr-FR, *", words.ZH},
	{"header malformed: config", "zh", ";;,", words.ZH},
}

// TestErrorLanguage: the representative errors keep their status and
// code in every language, and their message is the catalogue's sentence in
// the language of the request (its Accept-Language, else the API's Lang).
func TestErrorLanguage(t *testing.T) {
	cases := []struct {
		name   string
		status int
		code   string
		mod    func(*setup)
		// send makes the error happen and returns its answer, and the
		// sentence the message must be (key and args).
		send func(h *harness, accept string) (int, api.ErrorResponse, words.Key, []any)
	}{
		{name: "400 empty message", status: http.StatusBadRequest, code: "invalid_request",
			send: func(h *harness, accept string) (int, api.ErrorResponse, words.Key, []any) {
				var e api.ErrorResponse
				st := h.doIn(accept, "POST", "/agent/chat", tokAlice, map[string]any{"message": "  "}, &e)
				return st, e, words.APIMessageEmpty, nil
			}},
		{name: "404 unknown token", status: http.StatusNotFound, code: "not_found",
			send: func(h *harness, accept string) (int, api.ErrorResponse, words.Key, []any) {
				var e api.ErrorResponse
				st := h.doIn(accept, "POST", "/agent/chat", tokAlice,
					map[string]any{"confirmationToken": "pa_" + strings.Repeat("0", 32), "confirmed": true}, &e)
				return st, e, words.APIUnknownOrUsed, nil
			}},
		{name: "404 unknown approval", status: http.StatusNotFound, code: "not_found",
			send: func(h *harness, accept string) (int, api.ErrorResponse, words.Key, []any) {
				var e api.ErrorResponse
				st := h.doIn(accept, "GET", "/api/approvals/apr_nonesuch", tokAlice, nil, &e)
				return st, e, words.APINoApproval, nil
			}},
		{name: "410 expired", status: http.StatusGone, code: "expired",
			send: func(h *harness, accept string) (int, api.ErrorResponse, words.Key, []any) {
				pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
				h.clk.Advance(approval.DefaultTimeout + time.Second)
				// The engine's expiry has run: the answer names the
				// time (before it, the claim answers without one).
				waitfor.True(h.t, "the approval expired", func() bool {
					rec, err := h.engine.Get(context.Background(), approval.ID(pa.ApprovalID))
					return err == nil && rec.State == approval.StateExpired
				})
				var e api.ErrorResponse
				st := h.doIn(accept, "POST", "/agent/chat", tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true}, &e)
				return st, e, words.APIActionExpiredAt, []any{pa.ExpiresAt}
			}},
		{name: "429 cap", status: http.StatusTooManyRequests, code: "rate_limited",
			mod: func(s *setup) { s.cfg.MaxPendingPerUser = 1 },
			send: func(h *harness, accept string) (int, api.ErrorResponse, words.Key, []any) {
				h.ask(tokAlice, "c1", "erase t1")
				var e api.ErrorResponse
				st := h.doIn(accept, "POST", "/agent/chat", tokAlice, map[string]any{"message": "erase t2", "conversationId": "c2"}, &e)
				return st, e, words.APITooManyPending, nil
			}},
		{name: "503 not running", status: http.StatusServiceUnavailable, code: "unavailable",
			send: func(h *harness, accept string) (int, api.ErrorResponse, words.Key, []any) {
				if err := h.api.Close(context.Background()); err != nil {
					h.t.Fatal(err)
				}
				var e api.ErrorResponse
				st := h.doIn(accept, "POST", "/agent/chat", tokAlice, map[string]any{"message": "hi"}, &e)
				return st, e, words.APINotRunning, nil
			}},
	}
	for _, tc := range cases {
		for _, l := range langs {
			t.Run(tc.name+"/"+l.name, func(t *testing.T) {
				h := newHarness(t, func(s *setup) {
					s.cfg.Lang = l.cfg
					if tc.mod != nil {
						tc.mod(s)
					}
				})
				st, e, k, args := tc.send(h, l.accept)
				if st != tc.status || e.Error != tc.code {
					t.Fatalf("status %d, code %q; want %d %q (message %q)", st, e.Error, tc.status, tc.code, e.Message)
				}
				if want := words.Text(l.want, k, args...); e.Message != want {
					t.Errorf("message %q, want %q (%s)", e.Message, want, l.want)
				}
			})
		}
	}
}

// TestRefusalLanguage: a 403 names who may decide in the language of the
// request, both by token (/agent/chat) and by decision
// (/api/approvals/{id}/decision).
func TestRefusalLanguage(t *testing.T) {
	rule := approval.ApproverRule{Mode: approval.ApproverChat, NotRequester: true}
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			h := newHarness(t, fourEyes(approval.ApproverChat), func(s *setup) { s.cfg.Lang = l.cfg })
			pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
			want := words.Text(l.want, words.APIForbiddenOwn, rule.DescribeIn(string(l.want)))
			var e api.ErrorResponse
			st := h.doIn(l.accept, "POST", "/agent/chat", tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true}, &e)
			if st != http.StatusForbidden || e.Error != "forbidden" || e.Message != want {
				t.Errorf("by token: %d %+v; want 403 forbidden %q", st, e, want)
			}
			rec, _ := h.auditOf(tokAlice, pa.ApprovalID)
			e = api.ErrorResponse{}
			st = h.doIn(l.accept, "POST", "/api/approvals/"+pa.ApprovalID+"/decision", tokAlice,
				map[string]any{"decision": "approve", "payloadSha256": rec["payloadSha256"]}, &e)
			if st != http.StatusForbidden || e.Error != "forbidden" || e.Message != want {
				t.Errorf("by decision: %d %+v; want 403 forbidden %q", st, e, want)
			}
		})
	}
}

// TestAnswerLanguage: the words the API writes into an answer (the text of
// an answer that waits for a confirmation, a batch's summary and its
// per-token messages) are in the request's language; the fields, codes and
// statuses are not.
func TestAnswerLanguage(t *testing.T) {
	for _, l := range langs {
		t.Run(l.name, func(t *testing.T) {
			h := newHarness(t, func(s *setup) { s.cfg.Lang = l.cfg })
			var r api.ChatResponse
			st := h.doIn(l.accept, "POST", "/agent/chat", tokAlice, map[string]any{"message": "erase orders", "conversationId": "c1"}, &r)
			if st != http.StatusOK || !r.RequiresConfirmation || r.PendingAction == nil {
				t.Fatalf("ask: %d %+v", st, r)
			}
			if want := words.Text(l.want, words.APIConfirmNeeded, r.PendingAction.Description); r.Text != want {
				t.Errorf("text %q, want %q", r.Text, want)
			}

			unknown := "pa_" + strings.Repeat("0", 32)
			var b api.ChatResponse
			st = h.doIn(l.accept, "POST", "/agent/chat", tokAlice,
				map[string]any{"confirmationTokens": []string{unknown, unknown}, "confirmed": true}, &b)
			if st != http.StatusOK || len(b.Results) != 2 {
				t.Fatalf("batch: %d %+v", st, b)
			}
			if want := words.Text(l.want, words.APIBatchDecided, 0, 2); b.Text != want {
				t.Errorf("batch text %q, want %q", b.Text, want)
			}
			for i, want := range []struct {
				code string
				key  words.Key
			}{{"not_found", words.APIUnknownOrUsed}, {"invalid_request", words.APIBatchTwice}} {
				got := b.Results[i]
				if got.Token != unknown || got.Error != want.code || got.Message != words.Text(l.want, want.key) {
					t.Errorf("result %d: %+v, want %s %q", i, got, want.code, words.Text(l.want, want.key))
				}
			}
		})
	}
}

func TestConfigLang(t *testing.T) {
	_, err := api.New(api.Config{Lang: "fr"}, newHarness(t).engine, quiet)
	if err == nil || !strings.Contains(err.Error(), "lang") {
		t.Fatalf("lang fr: %v", err)
	}
}
