package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
)

// SubscribeWanted decodes and delivers only the outcomes want asks for;
// a message of another form is decoded whole.
func TestSubscribeWanted(t *testing.T) {
	s, c := newStoreClient(t, redisstore.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan approval.ID, 10)
	want := func(id approval.ID) bool { return id == "ap_aaaaaaaa_00000000000000000000000000000001" }
	if err := s.SubscribeWanted(ctx, want, func(id approval.ID, o approval.Outcome) { got <- id }); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		`{"id":"ap_aaaaaaaa_00000000000000000000000000000002","outcome":{"status":"executed"}}`, // not wanted
		`{"id":"ap_aaaaaaaa_00000000000000000000000000000001","outcome":{"status":"executed"}}`, // wanted
		`{"outcome":{"status":"rejected"},"id":"ap_aaaaaaaa_00000000000000000000000000000003"}`, // another form
	} {
		if err := c.Publish(ctx, redisstore.OutcomeChannel(s), p).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var ids []approval.ID
	for len(ids) < 2 {
		select {
		case id := <-got:
			ids = append(ids, id)
		case <-time.After(5 * time.Second):
			t.Fatalf("delivered %v", ids)
		}
	}
	if ids[0] != "ap_aaaaaaaa_00000000000000000000000000000001" || ids[1] != "ap_aaaaaaaa_00000000000000000000000000000003" {
		t.Fatalf("delivered %v", ids)
	}
	select {
	case id := <-got:
		t.Fatalf("also delivered %s", id)
	case <-time.After(100 * time.Millisecond):
	}
}
