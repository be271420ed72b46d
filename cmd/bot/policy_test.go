package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// approvalInfo fetches GET /api/approvals/{id} of a chat answer's pending
// action: its risk and the policy's reason.
func approvalInfo(t *testing.T, base string, res map[string]any) (risk, reason string) {
	t.Helper()
	pa, _ := res["pendingAction"].(map[string]any)
	id, _ := pa["approvalId"].(string)
	if id == "" {
		t.Fatalf("no approvalId in %v", res)
	}
	code, body := get(t, base+"/api/approvals/"+id)
	if code != http.StatusOK {
		t.Fatalf("GET /api/approvals/%s: %d %s", id, code, body)
	}
	var got struct {
		Approval struct {
			Risk   string `json:"risk"`
			Reason string `json:"reason"`
		} `json:"approval"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("GET approval: %v\n%s", err, body)
	}
	return got.Approval.Risk, got.Approval.Reason
}

// decline rejects a chat answer's pending action.
func decline(t *testing.T, base string, res map[string]any) {
	t.Helper()
	out := chat(t, base, map[string]any{"confirmationToken": token(t, res), "confirmed": false})
	if !strings.Contains(strings.ToLower(fmt.Sprint(out["text"])), "declined") && !strings.Contains(fmt.Sprint(out["actions"]), "rejected") {
		t.Fatalf("declining answered %v", out)
	}
}

// countCancelled asks, through sql_query (a LOW read: it runs at once),
// how many orders are cancelled.
func countCancelled(t *testing.T, base string) string {
	t.Helper()
	res := chat(t, base, map[string]any{"message": "/sql SELECT count(*) AS n FROM orders WHERE status = 'cancelled'"})
	if res["requiresConfirmation"] == true {
		t.Fatalf("a read asked for confirmation: %v", res)
	}
	return fmt.Sprint(res["text"])
}

// TestServeMassWritesAsk runs the real serve with the default policy, the
// rules model and the demo database: a mass UPDATE is HIGH and waits,
// saying why; an INSERT asks the first time and not a second time in the
// grant window; a DDL and an UPDATE without WHERE are HIGH.
func TestServeMassWritesAsk(t *testing.T) {
	s := serve(t, "-data", t.TempDir())
	before := countCancelled(t, s.base)
	if !strings.Contains(before, "7") {
		t.Fatalf("cancelled orders before: %s", before)
	}

	// The statement: 29 rows of the demo database.
	res := chat(t, s.base, map[string]any{"message": "/sql UPDATE orders SET status='cancelled' WHERE id < 30"})
	token(t, res)
	if risk, reason := approvalInfo(t, s.base, res); risk != "HIGH" || reason != "affects 29 rows, more than 20" {
		t.Errorf("the mass UPDATE is %s because %q; want HIGH because affects 29 rows, more than 20", risk, reason)
	}
	if after := countCancelled(t, s.base); after != before {
		t.Fatalf("the UPDATE ran before anyone approved it: %s, before %s", after, before)
	}
	decline(t, s.base, res)

	// An INSERT asks the first time (MEDIUM); once approved, the same
	// INSERT in the same conversation (session) within the grant window
	// runs without asking.
	insert := "/sql INSERT INTO orders (customer, amount_cents, status, created_at) VALUES ('zoe', 100, 'paid', '2026-11-22')"
	res = chat(t, s.base, map[string]any{"message": insert})
	conv := res["conversationId"]
	if risk, reason := approvalInfo(t, s.base, res); risk != "MEDIUM" || !strings.Contains(reason, "first time") {
		t.Errorf("the INSERT is %s because %q; want MEDIUM, asking the first time", risk, reason)
	}
	res = chat(t, s.base, map[string]any{"confirmationToken": token(t, res), "confirmed": true})
	if text := fmt.Sprint(res["text"]); !strings.Contains(text, "1 row affected") {
		t.Fatalf("the confirmed INSERT answered %v", res)
	}
	res = chat(t, s.base, map[string]any{"message": insert, "conversationId": conv})
	if res["requiresConfirmation"] == true || !strings.Contains(fmt.Sprint(res["text"]), "1 row affected") {
		t.Errorf("the same INSERT in the grant window: %v; want it run without asking", res)
	}

	// Another conversation has no grant.
	res = chat(t, s.base, map[string]any{"message": insert})
	decline(t, s.base, res)

	// HIGH whatever the rows: a DDL, an UPDATE without WHERE (40 demo
	// orders and the two inserted).
	for stmt, why := range map[string]string{
		"/sql CREATE TABLE notes (id INTEGER)":    "CREATE TABLE changes the schema (DDL)",
		"/sql UPDATE orders SET amount_cents = 0": "UPDATE without WHERE changes every row; affects 42 rows, more than 20",
	} {
		res := chat(t, s.base, map[string]any{"message": stmt})
		token(t, res)
		if risk, reason := approvalInfo(t, s.base, res); risk != "HIGH" || reason != why {
			t.Errorf("%s is %s because %q; want HIGH because %s", stmt, risk, reason, why)
		}
		decline(t, s.base, res)
	}
}
