package memstore_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
)

// storeSizes are the stores BenchmarkApprovalPath runs against: approvals
// that have ended before the measured ones (history), and approvals held
// pending meanwhile, spread over pending/10 chats.
var storeSizes = []struct{ history, pending int }{
	{2000, 0},
	{32000, 0},
	{2000, 20000},
	{32000, 20000},
}

// benchApproval returns a copy of tmpl, pending from now, in its own
// session, in chat.
func benchApproval(tmpl *approval.Approval, i int, chat string, now time.Time) *approval.Approval {
	a := tmpl.Clone()
	a.Session = approval.SessionKey("bench:" + strconv.Itoa(i))
	a.ID = approval.NewID(a.Session)
	a.ChatID = chat
	a.CreatedAt, a.ExpiresAt = now, now.Add(time.Hour)
	return a
}

// decide approves and completes a, as a click and its tool's run do.
func decide(b *testing.B, s *memstore.Store, a *approval.Approval, now time.Time) {
	ctx := context.Background()
	res, err := s.Claim(ctx, a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256,
		Actor: "bob", Source: approval.SourceCard, Channel: a.Channel, ChatID: a.ChatID, Now: now})
	if err != nil || res.Code != approval.ClaimOK {
		b.Fatalf("claim: %v, %v", res.Code, err)
	}
	if _, err := s.Complete(ctx, a.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted}, time.Hour); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkApprovalPath is the memory store's part of one approval: Put,
// ChatPending of its chat (the card's short code), Claim and Complete,
// with history approvals ended before and pending ones held. The cost per
// operation is flat in both: every step reads its own approval and its
// chat's, never every record. Besides ns/op (wall time, which other work
// on a shared machine moves) it reports cpu-ns/op, the process's CPU time
// per approval (its garbage collection included).
func BenchmarkApprovalPath(b *testing.B) {
	ctx := context.Background()
	tmpl := storetest.NewApproval(b)
	for _, sz := range storeSizes {
		b.Run(fmt.Sprintf("history=%d/pending=%d", sz.history, sz.pending), func(b *testing.B) {
			s := memstore.New(memstore.Options{})
			now := time.Now()
			n := 0
			put := func(chat string) *approval.Approval {
				a := benchApproval(tmpl, n, chat, now)
				n++
				if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
					b.Fatal(err)
				}
				return a
			}
			for i := range sz.history {
				decide(b, s, put("history-"+strconv.Itoa(i)), now)
			}
			for i := range sz.pending {
				put("held-" + strconv.Itoa(i%max(sz.pending/10, 1)))
			}
			b.ReportAllocs()
			cpu0 := processCPU()
			i := 0
			for b.Loop() {
				a := put("run-" + strconv.Itoa(i))
				if got, err := s.ChatPending(ctx, a.Channel, a.ChatID); err != nil || len(got) != 1 {
					b.Fatalf("ChatPending = %d, %v; want its one approval", len(got), err)
				}
				decide(b, s, a, now)
				i++
			}
			if cpu0 >= 0 {
				b.ReportMetric(float64(processCPU()-cpu0)/float64(i), "cpu-ns/op")
			}
		})
	}
}
