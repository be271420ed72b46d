package approval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// A caller may choose the new approval's id (the agent records it before
// the card is out), but only an id of the request's own session: its
// shard names the Redis slot of the session's keys.
func TestRequestWithTheCallersID(t *testing.T) {
	f := newFixture(t, backends[0])
	const s approval.SessionKey = "test:chat-id"
	id := approval.NewID(s)
	a := request(t, f.a, func(r *approval.Request) { r.Session, r.ID = s, id })
	if a.ID != id {
		t.Fatalf("approval id %s, want %s", a.ID, id)
	}
	if got, err := f.a.Get(context.Background(), id); err != nil || got.Session != s {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	for name, bad := range map[string]approval.ID{
		"another session's": approval.NewID("test:elsewhere"),
		"malformed":         "ap_nothex",
	} {
		_, err := f.a.Request(context.Background(), approval.Request{ID: bad, Session: s, Channel: "test", ChatID: "chat-id", Requester: "alice",
			Calls:   []approval.Call{{Tool: "sql_execute", Args: json.RawMessage(`{"statement":"DELETE FROM t"}`)}},
			Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh}})
		if approval.KindOf(err) != errkind.Invalid {
			t.Errorf("%s id: err %v, want kind invalid", name, err)
		}
	}
}
