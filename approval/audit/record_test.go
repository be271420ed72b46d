package audit

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

var eventCases = []struct {
	e    Event
	want bool
}{
	{EventWriteRequest, true}, {EventConfirm, true}, {EventReject, true}, {EventExecute, true},
	{EventExecuteFailed, true}, {EventExecuteUnknown, true}, {EventReplay, true}, {EventExpire, true},
	{EventSupersede, true}, {EventCancel, true}, {EventUnauthorized, true}, {EventTampered, true},
	{EventRevoke, true}, {"", false}, {"Confirm", false}, {"executed", false},
}

func TestEventValid(t *testing.T) {
	for _, tc := range eventCases {
		if got := tc.e.Valid(); got != tc.want {
			t.Errorf("Event(%q).Valid() = %v, want %v", tc.e, got, tc.want)
		}
	}
}

func TestAppendUnknownEventIsKeptAndLogged(t *testing.T) {
	logger, logs := captureLogger()
	mem := NewMemorySink()
	l := NewLog(LogConfig{Writer: "w"}, stepClock(), logger, mem)
	l.Append(Record{Event: "bogus", ApprovalID: "ap_1"})
	if err := l.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	recs, _ := mem.Read(testCtx(t))
	if len(recs) != 1 || recs[0].Event != "bogus" {
		t.Fatalf("stored %+v", recs)
	}
	if !strings.Contains(logs.String(), "unknown event") {
		t.Errorf("unknown event not logged; log:\n%s", logs)
	}
}

var errorCases = []struct {
	err  *Error
	want string
}{
	{&Error{Op: "audit.ReadFile", Kind: errkind.Invalid, Where: "/x.jsonl", Line: 3, Err: errString("bad")},
		"audit.ReadFile /x.jsonl line 3: invalid: bad"},
	{&Error{Op: "audit.Flush", Kind: errkind.Unavailable}, "audit.Flush: unavailable"},
	{&Error{Op: "audit.Op"}, "audit.Op"},
}

type errString string

func (e errString) Error() string { return string(e) }

func TestErrorMessage(t *testing.T) {
	for _, tc := range errorCases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
	if KindOf(E("outer", errkind.Other, E("inner", errkind.Closed, nil))) != errkind.Closed {
		t.Error("KindOf does not look through errkind.Other")
	}
}
