package audit

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Event names what happened to an approval. The words follow the states
// and outcomes of docs/ARCHITECTURE.md.
type Event string

// Events.
const (
	EventWriteRequest   Event = "write_request"   // a risky call asked for approval
	EventConfirm        Event = "confirm"         // a person confirmed; the call was claimed (for a quorum: the approval that reached it)
	EventVote           Event = "vote"            // a person approved towards a quorum not reached yet; the approval still waits
	EventReject         Event = "reject"          // a person rejected it
	EventExecute        Event = "execute"         // the call ran and succeeded
	EventExecuteFailed  Event = "execute_failed"  // the call ran and reported a failure
	EventExecuteUnknown Event = "execute_unknown" // the call's effect is unknown; the approval is frozen
	EventReplay         Event = "replay"          // a cached outcome was returned instead of running again
	EventExpire         Event = "expire"          // nobody decided in time
	EventSupersede      Event = "supersede"       // a newer approval in the session replaced it
	EventCancel         Event = "cancel"          // the requester or the system withdrew it
	EventUnauthorized   Event = "unauthorized"    // someone who may not decide tried to
	EventTampered       Event = "tampered"        // a decision carried the wrong payload hash; or (package gate, outcome idempotency_conflict) an agent's request key reused with another payload
	EventAutoAllow      Event = "auto_allow"      // another agent's request the policy allowed without asking (package gate)
	EventCallback       Event = "callback"        // an agent's decision POSTed to its callback_url (by the one sender that claimed the delivery): delivered or failed
	EventResolveDone    Event = "resolve_done"    // a person recorded a frozen approval as done by hand
	EventRetry          Event = "retry"           // a person had a frozen approval run once more (its run is audited after it)
	EventResolveAbandon Event = "resolve_abandon" // a person abandoned a frozen approval: taken as not done
	EventRevoke         Event = "revoke"          // a person revoked a session grant (/revoke); approval_id is the approval that granted it
	EventEscalate       Event = "escalate"        // nobody decided in time: a step of its escalation showed it in another chat (the note says which; error_text when that failed)
	EventStandingRule   Event = "standing_rule"   // a person allowed another agent a standing rule (the confirm's grant always; reason names the rule, session the chat's rules); /revoke ends it (revoke)
)

// Valid reports whether e is one of the events above.
func (e Event) Valid() bool {
	switch e {
	case EventWriteRequest, EventConfirm, EventReject, EventExecute, EventExecuteFailed,
		EventExecuteUnknown, EventReplay, EventExpire, EventSupersede, EventCancel,
		EventUnauthorized, EventTampered, EventAutoAllow, EventCallback,
		EventResolveDone, EventRetry, EventResolveAbandon, EventRevoke, EventVote, EventEscalate, EventStandingRule:
		return true
	}
	return false
}

// Record is one entry of the audit trail. Callers fill in what happened
// (Event, ApprovalID and the optional fields); Log.Append fills in Writer,
// Seq, Time (when zero), Prev and Hash.
//
// A Record never carries a tool's arguments: only PayloadSHA256, the hash of
// the tool name and its canonical arguments. Error and Reason must be
// sanitised by the caller (no secrets, tokens, connection strings or
// argument values; the engine passes Reason through redact.Clean): they are
// stored as given and kept for as long as the trail is.
type Record struct {
	Writer        string    `json:"writer"`                    // the process that wrote it (hostname-pid-random); each writer has its own chain
	Seq           uint64    `json:"seq"`                       // 1, 2, 3… per writer
	Time          time.Time `json:"time"`                      // UTC, from the log's clock
	Event         Event     `json:"event"`                     // what happened
	ApprovalID    string    `json:"approval_id"`               // the approval it happened to
	Session       string    `json:"session,omitempty"`         // the session key
	Tool          string    `json:"tool,omitempty"`            // the tool name
	PayloadSHA256 string    `json:"payload_sha256,omitempty"`  // hash of the tool name and canonical arguments
	Actor         string    `json:"actor,omitempty"`           // who decided (or tried to)
	Source        string    `json:"source,omitempty"`          // where the decision came from (card, reply, api…)
	Outcome       string    `json:"outcome,omitempty"`         // the outcome status
	Error         string    `json:"error,omitempty"`           // sanitised error text; never secrets
	Reason        string    `json:"reason,omitempty"`          // what the actor wrote: a rejection's comment, a cancellation's reason (sanitised, bounded)
	Grant         string    `json:"grant,omitempty"`           // a confirm's grant choice for a MEDIUM approval that may grant a window: once or session; always for a standing rule
	Proposed      string    `json:"proposed_sha256,omitempty"` // for an approval an approver edited before approving: the payload hash of the calls as proposed (PayloadSHA256 is then the approved, edited calls' hash, which the execute record names as the executed one)
	Call          int       `json:"call,omitempty"`            // for a record of one call of a batch (a per-call decision): the call's number, 1-based; Tool and PayloadSHA256 are then that call's. 0: the whole approval
	TraceID       string    `json:"trace_id,omitempty"`        // the OpenTelemetry trace (32 hex digits) of the approval's spans, when tracing recorded it: the same id in the collector finds the request, the card, the decision, the claim and the run
	Prev          string    `json:"prev"`                      // Hash of this writer's previous record; "" for its first
	Hash          string    `json:"hash"`                      // hex sha256 of the record's canonical encoding (see ComputeHash)
}

// canonVersion starts every canonical encoding, so that a future change of
// the encoding cannot be confused with this one.
const canonVersion = "hitlbot-audit-v1\n"

// ComputeHash returns the hex sha256 of the record's canonical encoding,
// which covers every field except Hash. The encoding is simple enough to
// reproduce in any language: the line "hitlbot-audit-v1", then for each
// field in this order — writer, seq, time, event, approval_id, session,
// tool, payload_sha256, actor, source, outcome, error, reason, grant, prev — its
// name, ':', the decimal byte length of its value, ':', the value's bytes
// and '\n'. seq is written in decimal; time as RFC 3339 with nanoseconds
// in UTC (time.RFC3339Nano, trailing zeros dropped); empty fields are
// written with length 0, except reason, grant, call, proposed_sha256 and
// trace_id (in that order, before prev), which are left out entirely when
// empty: the fields came later, and records written before them (which
// have none) keep their hashes.
func (r Record) ComputeHash() string {
	var buf [512]byte
	sum := sha256.Sum256(r.appendCanonical(buf[:0]))
	return hex.EncodeToString(sum[:])
}

func (r *Record) appendCanonical(b []byte) []byte {
	b = append(b, canonVersion...)
	b = canonField(b, "writer", r.Writer)
	var num [20]byte
	b = canonFieldBytes(b, "seq", strconv.AppendUint(num[:0], r.Seq, 10))
	var ts [40]byte
	b = canonFieldBytes(b, "time", r.Time.UTC().AppendFormat(ts[:0], time.RFC3339Nano))
	b = canonField(b, "event", string(r.Event))
	b = canonField(b, "approval_id", r.ApprovalID)
	b = canonField(b, "session", r.Session)
	b = canonField(b, "tool", r.Tool)
	b = canonField(b, "payload_sha256", r.PayloadSHA256)
	b = canonField(b, "actor", r.Actor)
	b = canonField(b, "source", r.Source)
	b = canonField(b, "outcome", r.Outcome)
	b = canonField(b, "error", r.Error)
	if r.Reason != "" {
		b = canonField(b, "reason", r.Reason)
	}
	if r.Grant != "" {
		b = canonField(b, "grant", r.Grant)
	}
	if r.Call > 0 {
		b = canonField(b, "call", strconv.Itoa(r.Call))
	}
	if r.Proposed != "" {
		b = canonField(b, "proposed_sha256", r.Proposed)
	}
	if r.TraceID != "" {
		b = canonField(b, "trace_id", r.TraceID)
	}
	b = canonField(b, "prev", r.Prev)
	return b
}

func canonField(b []byte, name, v string) []byte {
	b = append(b, name...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, ':')
	b = append(b, v...)
	return append(b, '\n')
}

func canonFieldBytes(b []byte, name string, v []byte) []byte {
	b = append(b, name...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, ':')
	b = append(b, v...)
	return append(b, '\n')
}

// NewWriterID returns a writer name for this process:
// "hostname-pid-random", the random part 8 hex digits, so that a restarted
// process (which may get the same pid) starts a new chain.
func NewWriterID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("audit: crypto/rand failed: " + err.Error())
	}
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// decodeRecord parses one JSON record strictly: unknown fields and trailing
// data are errors.
func decodeRecord(b []byte) (Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Record{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Record{}, errors.New("trailing data after the record")
	}
	return r, nil
}

// encodeRecord appends the JSON of r and a newline to b.
func encodeRecord(b []byte, r *Record) ([]byte, error) {
	j, err := json.Marshal(r)
	if err != nil {
		return b, fmt.Errorf("encode record seq %d: %w", r.Seq, err)
	}
	b = append(b, j...)
	return append(b, '\n'), nil
}
