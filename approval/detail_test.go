package approval_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// TestOutcomeDetail: every outcome that is worded from a status sentence
// carries what it says beyond the sentence in Detail, so that no reader
// parses Content: Content is the sentence, then ": " (or " (" … ")" for a
// note) and Detail. The decider's result, the waiter's (published) and the
// record's (stored) agree.
func TestOutcomeDetail(t *testing.T) {
	text := approval.DefaultOutcomeText("en")
	type got struct {
		a *approval.Approval
		o approval.Outcome
	}
	cases := []struct {
		name   string
		status approval.Status
		wrap   func(approval.Store) approval.Store // the stores of the fixture, if not as they are
		run    func(t *testing.T, f *fixture) got
		detail string // exact, or a part when contains is set
		contains,
		note, // Content is "<sentence> (<Detail>)"
		final bool // the approval ended: Wait and the record have the outcome too
	}{
		{name: "executed", status: approval.StatusExecuted, final: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			return got{a, decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))}
		}},
		{name: "rejected with a comment", status: approval.StatusRejected, detail: `bob ("wrong table")`, final: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			d := decision(a, approval.Reject, "bob")
			d.Comment = "wrong table"
			return got{a, decide(t, f.b, a.ID, d)}
		}},
		{name: "rejected", status: approval.StatusRejected, detail: "bob", final: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			return got{a, decide(t, f.b, a.ID, decision(a, approval.Reject, "bob"))}
		}},
		{name: "failed", status: approval.StatusFailed, detail: "constraint violated", final: true, run: func(t *testing.T, f *fixture) got {
			f.tool.mode.Store("fail")
			a := request(t, f.a)
			return got{a, decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))}
		}},
		{name: "not run", status: approval.StatusFailed, detail: "not run: the decision could not be copied to the store's replicas in time", final: true,
			wrap: func(s approval.Store) approval.Store { return unreplicated{s} }, run: func(t *testing.T, f *fixture) got {
				a := request(t, f.a)
				return got{a, decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))}
			}},
		{name: "frozen", status: approval.StatusFrozen, detail: "the tool stopped with an error, so whether it took effect is unknown (details in the server log)", final: true,
			run: func(t *testing.T, f *fixture) got {
				f.tool.mode.Store("unknown")
				a := request(t, f.a)
				return got{a, decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))}
			}},
		{name: "frozen as stale", status: approval.StatusFrozen, detail: "the replica running it stopped: approved by bob", contains: true, final: true,
			run: func(t *testing.T, f *fixture) got {
				a := request(t, f.a)
				if res, err := f.sa.Claim(context.Background(), a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256,
					Actor: "bob", Source: approval.SourceCard, Now: f.clk.Now()}); err != nil || res.Code != approval.ClaimOK {
					t.Fatalf("claim: %+v, %v", res, err)
				}
				f.clk.Advance(10 * time.Minute)
				sweepBoth(t, f)
				rec, err := f.a.Get(context.Background(), a.ID)
				if err != nil || rec.Outcome == nil {
					t.Fatalf("Get: %+v, %v", rec, err)
				}
				return got{a, *rec.Outcome}
			}},
		{name: "expired", status: approval.StatusExpired, final: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			f.clk.Advance(6 * time.Minute)
			return got{a, decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))}
		}},
		{name: "superseded", status: approval.StatusSuperseded, final: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			request(t, f.b, func(r *approval.Request) { r.Session = a.Session })
			return got{a, decide(t, f.a, a.ID, decision(a, approval.Approve, "bob"))}
		}},
		{name: "cancelled with a reason", status: approval.StatusCancelled, detail: "changed my mind", final: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			o, err := f.b.Cancel(context.Background(), a.ID, "alice", approval.SourceAPI, "changed my mind")
			if err != nil {
				t.Fatal(err)
			}
			return got{a, o}
		}},
		{name: "cancelled by the process", status: approval.StatusCancelled, final: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			o, err := f.b.Cancel(context.Background(), a.ID, "", "", "")
			if err != nil {
				t.Fatal(err)
			}
			return got{a, o}
		}},
		{name: "unauthorized", status: approval.StatusUnauthorized, detail: "only alice, bob", note: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			return got{a, decide(t, f.b, a.ID, decision(a, approval.Approve, "mallory"))}
		}},
		{name: "already decided", status: approval.StatusAlreadyDecided, detail: "executed", note: true, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			decide(t, f.a, a.ID, decision(a, approval.Approve, "bob"))
			return got{a, decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))}
		}},
		{name: "tampered", status: approval.StatusTampered, run: func(t *testing.T, f *fixture) got {
			a := request(t, f.a)
			d := decision(a, approval.Approve, "bob")
			d.PayloadSHA256 = strings.Repeat("0", 64)
			return got{a, decide(t, f.b, a.ID, d)}
		}},
	}
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var wrap []func(approval.Store) approval.Store
				if c.wrap != nil {
					wrap = append(wrap, c.wrap)
				}
				f := newFixture(t, be, wrap...)
				g := c.run(t, f)
				seen := map[string]approval.Outcome{"the decider": g.o}
				if c.final {
					w, err := f.a.Wait(context.Background(), g.a.ID)
					if err != nil {
						t.Fatal(err)
					}
					rec, err := f.b.Get(context.Background(), g.a.ID)
					if err != nil || rec.Outcome == nil {
						t.Fatalf("Get: %+v, %v", rec, err)
					}
					seen["the waiter"], seen["the record"] = w, *rec.Outcome
				}
				for who, o := range seen {
					if o.Status != c.status {
						t.Fatalf("%s: status %s, want %s: %+v", who, o.Status, c.status, o)
					}
					if c.contains && !strings.Contains(o.Detail, c.detail) || !c.contains && o.Detail != c.detail {
						t.Errorf("%s: Detail %q, want %q", who, o.Detail, c.detail)
					}
					want := text.Text(o.Status)
					switch {
					case o.Status == approval.StatusExecuted:
						want = "run 1 ok"
					case o.Detail == "":
					case c.note:
						want += " (" + o.Detail + ")"
					default:
						want += ": " + o.Detail
					}
					if o.Content != want {
						t.Errorf("%s: Content %q, want %q", who, o.Content, want)
					}
				}
			})
		}
	})
}
