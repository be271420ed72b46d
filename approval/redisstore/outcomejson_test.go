package redisstore

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// TestPlainOutcomeKnowsEveryField: plainOutcome looks at every field of
// approval.Outcome; a new field must be added there (or the cache of
// outcomeJSON would answer an outcome that holds it with one that does not).
func TestPlainOutcomeKnowsEveryField(t *testing.T) {
	known := []string{"Status", "Content", "Detail", "IsError", "Results", "DecidedBy", "Comment", "DecidedVia", "Approvals", "Quorum", "Resolution"}
	typ := reflect.TypeFor[approval.Outcome]()
	var fields []string
	for i := range typ.NumField() {
		fields = append(fields, typ.Field(i).Name)
	}
	if !slices.Equal(fields, known) {
		t.Fatalf("approval.Outcome has fields %v; plainOutcome knows %v: teach it the new ones", fields, known)
	}
}

// TestOutcomeJSONIsMarshal: outcomeJSON answers json.Marshal's JSON, the
// first time and again (from its cache), plain outcome or not.
func TestOutcomeJSONIsMarshal(t *testing.T) {
	for _, o := range []approval.Outcome{
		{Status: approval.StatusExpired, Content: "Expired", IsError: true},
		{Status: approval.StatusExpired, Content: "Expired"},
		{Status: approval.StatusSuperseded, Content: "已被新的请求取代 <&>", IsError: true},
		{Status: approval.StatusRejected, Content: "Rejected: u1", Detail: "u1", IsError: true, DecidedBy: "u1"},
		{Status: approval.StatusExecuted, Content: "ok", Results: []approval.Result{{Tool: "t", Content: "ok", Status: approval.StatusExecuted}}},
		{Status: approval.StatusAwaitingQuorum, Content: "1 of 2", Approvals: 1, Quorum: 2},
		{Status: approval.StatusFrozen, Resolution: approval.ResolveRetry},
		{Status: approval.StatusCancelled, Comment: "no", DecidedVia: approval.SourceCard},
	} {
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if got, err := outcomeJSON(o); err != nil || got != string(want) {
				t.Errorf("outcomeJSON(%+v) = %s, %v; want %s", o, got, err, want)
			}
		}
	}
}
