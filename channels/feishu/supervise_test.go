package feishu

import (
	"context"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// When the server sends ReconnectCount 0 the SDK does not reconnect: its
// Start returns. The supervisor then starts a new client, and Ready says
// "not connected" in between.
func TestSupervisorReplacesAStoppedClient(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	fake.ClientConfig.ReconnectCount = 0
	ch, err := New(testConfig(fake), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Ready(); err == nil {
		t.Fatal("ready before Start")
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	fake.Drop()
	eventually(t, "not ready after the drop", func() bool { return ch.Ready() != nil })
	eventually(t, "a new connection", func() bool { return fake.Connects() >= 2 && ch.Ready() == nil })
	e := feishutest.MessageEvent{EventID: "ev_s", MessageID: "om_s", ChatID: "oc_s", ChatType: "p2p", Sender: "ou_alice", Text: "again"}
	if r, err := fake.Push(e.JSON(), 5*time.Second); err != nil || r.StatusCode != 200 {
		t.Fatalf("push: %+v %v", r, err)
	}
	if got := h.messages(); len(got) != 1 {
		t.Fatalf("messages %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ch.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ch.Ready(); err == nil {
		t.Fatal("ready after Close")
	}
}

// Start fails when the bootstrap refuses the credentials for good.
func TestStartFailsOnBadCredentials(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	cfg := testConfig(fake)
	cfg.StartTimeout = 3 * time.Second
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	fake.RefuseBootstrap(1000040344)
	if err := ch.Start(context.Background(), &recorder{}); err == nil {
		t.Fatal("Start succeeded against a refusing bootstrap")
	}
}
