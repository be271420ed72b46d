package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/internal/testredis"
)

// startBin starts the built binary as a replica (args after -listen and
// -data) and waits for its ready line.
func startBin(t *testing.T, bin, data string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-listen", "127.0.0.1:0", "-data", data}, args...)...)
	cmd.Dir = t.TempDir()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	var base string
	waitFor(t, 30*time.Second, "the ready line", func() bool {
		m := readyRE.FindStringSubmatch(stdout.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	return cmd, base
}

// buildBin builds the bot binary for a test that runs it (skipped with
// -short, or without go on PATH) and returns its path.
func buildBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot build the binary")
	}
	bin := filepath.Join(t.TempDir(), "bot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// sharedRedis points the replicas a test starts at one Redis of its own.
func sharedRedis(t *testing.T) {
	t.Helper()
	client, prefix := testredis.Start(t)
	t.Cleanup(func() { keysDocumented(t, client, prefix) })
	t.Setenv("HITLBOT_STORE_BACKEND", "redis")
	t.Setenv("HITLBOT_STORE_REDIS_URL", redisURL(t, client))
	t.Setenv("HITLBOT_STORE_REDIS_PREFIX", prefix)
}

// askThenKill starts a replica, sends it req (a message that asks for an
// approval), kills it with SIGKILL once the pending action is out, and
// returns the approval's id.
func askThenKill(t *testing.T, bin, data string, req map[string]any) string {
	t.Helper()
	a, base := startBin(t, bin, data)
	res := chat(t, base, req)
	token(t, res)
	pa, _ := res["pendingAction"].(map[string]any)
	id, _ := pa["approvalId"].(string)
	if id == "" {
		t.Fatalf("no approvalId in %v", res)
	}
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestKillWaitingReplica: kill -9 of the replica holding a pending approval;
// a second replica on the same Redis and data dir decides it, and it runs
// exactly once.
func TestKillWaitingReplica(t *testing.T) {
	bin := buildBin(t)
	sharedRedis(t)
	t.Setenv("HITLBOT_APPROVAL_SWEEP_INTERVAL", "1s")
	data := t.TempDir()

	a, baseA := startBin(t, bin, data)
	tok := token(t, chat(t, baseA, map[string]any{"message": deleteCancelled}))
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}

	_, baseB := startBin(t, bin, data)
	res := chat(t, baseB, map[string]any{"confirmationToken": tok, "confirmed": true})
	if !strings.Contains(fmt.Sprint(res["text"]), "7 rows affected") {
		t.Errorf("deciding on B after kill -9 of A answered %v", res)
	}
	body, _ := json.Marshal(map[string]any{"confirmationToken": tok, "confirmed": true})
	resp, err := http.Post(baseB+"/agent/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a second confirmation got %d, want 404", resp.StatusCode)
	}

	var out, errb bytes.Buffer
	if st := run(context.Background(), []string{"audit", "verify", "-data", data}, nil, &out, &errb); st != 0 ||
		!strings.Contains(out.String(), "OK redis stream") {
		t.Errorf("audit verify: exit %d\n%s%s", st, out.String(), errb.String())
	}
}

// TestKillWaitingReplicaExpires: kill -9 of the replica holding a pending
// approval; nobody decides, and the sweeper of the other replica expires it
// exactly once. The statement never runs.
func TestKillWaitingReplicaExpires(t *testing.T) {
	bin := buildBin(t)
	sharedRedis(t)
	t.Setenv("HITLBOT_APPROVAL_SWEEP_INTERVAL", "1s")
	t.Setenv("HITLBOT_APPROVAL_POLICY_TIMEOUTS_HIGH", "3s")
	data := t.TempDir()

	id := askThenKill(t, bin, data, map[string]any{"message": deleteCancelled})

	_, baseB := startBin(t, bin, data)
	var got struct {
		Approval struct {
			State string `json:"state"`
		} `json:"approval"`
		Audit []struct {
			Event string `json:"event"`
		} `json:"audit"`
	}
	waitFor(t, 15*time.Second, "the sweeper on B to expire the approval", func() bool {
		code, body := get(t, baseB+"/api/approvals/"+id)
		if code != http.StatusOK {
			return false
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("GET approval: %v\n%s", err, body)
		}
		return got.Approval.State == "expired"
	})
	expires := 0
	for _, r := range got.Audit {
		switch r.Event {
		case "expire":
			expires++
		case "confirm", "execute", "execute_failed", "execute_unknown":
			t.Errorf("audit trail has %q for an approval nobody decided: %+v", r.Event, got.Audit)
		}
	}
	if expires != 1 {
		t.Errorf("audit trail has %d expire records, want 1: %+v", expires, got.Audit)
	}
	res := chat(t, baseB, map[string]any{"message": "/sql SELECT count(*) FROM orders WHERE status = 'cancelled'"})
	if txt := fmt.Sprint(res["text"]); !strings.Contains(txt, "\n7\n") || strings.Contains(txt, "rows affected") {
		t.Errorf("the cancelled orders after expiry: %v, want 7", res)
	}
}

// TestKillWaitingReplicaResumes: kill -9 of the replica whose turn waits
// for an approval; the decision comes through the other replica's API. The
// statement runs once, the turn resumes on that replica (after the dead
// replica's session lock lapses), and the client gets the resumed answer:
// in GET /api/approvals/{id}, and once, beside the answer of its next
// message in the conversation.
func TestKillWaitingReplicaResumes(t *testing.T) {
	bin := buildBin(t)
	sharedRedis(t)
	t.Setenv("HITLBOT_STORE_REDIS_SESSION_LOCK_TTL", "2s")
	data := t.TempDir()
	const conv = "kill-resume"

	id := askThenKill(t, bin, data, map[string]any{"message": deleteCancelled, "conversationId": conv})

	_, baseB := startBin(t, bin, data)
	code, body := get(t, baseB+"/api/approvals/"+id)
	var got struct {
		Approval struct {
			PayloadSHA256 string `json:"payloadSha256"`
			Resumed       *struct {
				ApprovalID string `json:"approvalId"`
				Text       string `json:"text"`
				Actions    []struct {
					Status string `json:"status"`
				} `json:"actions"`
			} `json:"resumed"`
		} `json:"approval"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("GET approval: %d %s", code, body)
	}
	dec, _ := json.Marshal(map[string]any{"decision": "approve", "payloadSha256": got.Approval.PayloadSHA256})
	resp, err := http.Post(baseB+"/api/approvals/"+id+"/decision", "application/json", bytes.NewReader(dec))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "executed") {
		t.Fatalf("decision on B: %d %s", resp.StatusCode, b)
	}

	waitFor(t, 20*time.Second, "the resumed answer in GET /api/approvals/{id}", func() bool {
		code, body := get(t, baseB+"/api/approvals/"+id)
		got.Approval.Resumed = nil
		return code == http.StatusOK && json.Unmarshal([]byte(body), &got) == nil && got.Approval.Resumed != nil
	})
	r := got.Approval.Resumed
	t.Logf("resumed answer: %q", r.Text)
	if r.ApprovalID != id || !strings.Contains(r.Text, "7 rows affected") || len(r.Actions) != 1 || r.Actions[0].Status != "executed" {
		t.Fatalf("resumed = %+v", r)
	}

	next := chat(t, baseB, map[string]any{"message": "/sql SELECT count(*) FROM orders WHERE status = 'cancelled'", "conversationId": conv})
	list, _ := next["resumed"].([]any)
	if len(list) != 1 {
		t.Fatalf("the next answer carries %d resumed answers, want 1: %v", len(list), next)
	}
	if first, _ := list[0].(map[string]any); first["approvalId"] != id || first["text"] != r.Text {
		t.Fatalf("resumed in the next answer = %v, want %+v", list[0], r)
	}
	if txt := fmt.Sprint(next["text"]); !strings.Contains(txt, "\n0\n") {
		t.Errorf("the cancelled orders after the resumed delete: %v, want 0", next["text"])
	}
	again := chat(t, baseB, map[string]any{"message": "hello", "conversationId": conv})
	if again["resumed"] != nil {
		t.Errorf("the resumed answer was given twice: %v", again)
	}

	var out, errb bytes.Buffer
	if st := run(context.Background(), []string{"audit", "verify", "-data", data}, nil, &out, &errb); st != 0 ||
		!strings.Contains(out.String(), "OK redis stream") {
		t.Errorf("audit verify: exit %d\n%s%s", st, out.String(), errb.String())
	}
}
