package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// hostileDecisions are decision bodies from outside that must each be
// refused with a 4xx and decide nothing. %s is the approval's payload
// hash.
var hostileDecisions = []struct {
	name string
	body string
}{
	{"not JSON", `approve please`},
	{"a JSON array", `["approve"]`},
	{"null", `null`},
	{"an unknown decision", `{"decision":"approve_all","payloadSha256":"%s"}`},
	{"the decision as a number", `{"decision":1,"payloadSha256":"%s"}`},
	{"no hash", `{"decision":"approve"}`},
	{"the hash as an object", `{"decision":"approve","payloadSha256":{"$ne":""}}`},
	{"another hash", `{"decision":"approve","payloadSha256":"` + strings.Repeat("0", 64) + `"}`},
	{"a comment of 2 MB", `{"decision":"approve","payloadSha256":"%s","comment":"` + strings.Repeat("x", 2<<20) + `"}`},
	{"a grant nobody knows", `{"decision":"approve","payloadSha256":"%s","grant":"forever"}`},
	{"a session grant on HIGH", `{"decision":"approve","payloadSha256":"%s","grant":"session"}`},
	{"calls naming no call", `{"decision":"approve","payloadSha256":"%s","calls":{"c9":"approve"}}`},
	{"calls with a bad verb", `{"decision":"approve","payloadSha256":"%s","calls":{"#1":"maybe"}}`},
	{"ten thousand calls", `{"decision":"approve","payloadSha256":"%s","calls":{` + manyCalls(10000) + `}}`},
	{"calls as a list", `{"decision":"approve","payloadSha256":"%s","calls":["#1"]}`},
	{"an edit with arguments that are no object", `{"decision":"edit","payloadSha256":"%s","arguments":"rm -rf /"}`},
	{"an edit nested 100,000 deep", `{"decision":"edit","payloadSha256":"%s","arguments":{"#1":` + strings.Repeat(`{"a":`, 100000) + `1` + strings.Repeat(`}`, 100000) + `}}`},
	{"a resolution of a pending approval", `{"decision":"resolve","payloadSha256":"%s","resolution":"retry"}`},
	{"a resolution nobody knows", `{"decision":"resolve","payloadSha256":"%s","resolution":"force"}`},
	{"two bodies", `{"decision":"reject","payloadSha256":"%s"}{"decision":"approve","payloadSha256":"%s"}`},
}

func manyCalls(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"#%d":"approve"`, i+1)
	}
	return strings.Join(parts, ",")
}

// TestHostileDecisionBodies: every body of hostileDecisions, posted by
// the requester herself to her pending approval, is answered with a 4xx
// (never a 5xx) and a JSON error, runs nothing and leaves the approval
// pending; the plain approve after them all runs the call once, its
// comment's control characters dropped.
func TestHostileDecisionBodies(t *testing.T) {
	h := newHarness(t)
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	info, _ := h.auditOf(tokAlice, pa.ApprovalID)
	hash, _ := info["payloadSha256"].(string)
	for _, tc := range hostileDecisions {
		body := strings.ReplaceAll(tc.body, "%s", hash)
		var out map[string]any
		st := h.do("POST", "/api/approvals/"+pa.ApprovalID+"/decision", tokAlice, body, &out)
		if st < 400 || st >= 500 || out["error"] == nil {
			t.Errorf("%s: %d %v; want a 4xx with an error", tc.name, st, out)
		}
		if info, _ := h.auditOf(tokAlice, pa.ApprovalID); info["state"] != "pending" {
			t.Fatalf("%s decided the approval: %v", tc.name, info)
		}
	}
	if n := h.erase.Runs.Load(); n != 0 {
		t.Fatalf("hostile bodies ran the call %d times", n)
	}
	if st, out := h.decision(tokAlice, pa.ApprovalID, map[string]any{"decision": "approve", "payloadSha256": hash, "comment": "ok\u0000\u001b[2J; checked"}); st != http.StatusOK || out["status"] != "executed" {
		t.Fatalf("the plain approve after them: %d %v", st, out)
	}
	if info, _ := h.auditOf(tokAlice, pa.ApprovalID); strings.ContainsAny(info["comment"].(string), "\x00\x1b") {
		t.Fatalf("the stored comment %q keeps control characters", info["comment"])
	}
	if n := h.erase.Runs.Load(); n != 1 {
		t.Fatalf("the call ran %d times, want once", n)
	}
}
