package redisstore

// The record of an approval: how its fields are written into a HASH and read
// back. See doc.go for the layout and why it is what it is.

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

const (
	// chunk is the longest value a record field holds: Redis's default
	// hash-max-listpack-value. Longer values are split (see split).
	chunk = 64
	// maxSplit is the longest value that is split; a longer one is kept
	// whole, and the record is a hashtable (it would be one anyway beyond
	// hash-max-listpack-entries, 512 fields). libLua's setlong agrees.
	maxSplit = 16384
)

// fields collects the field, value arguments of an HSET.
type fields []any

// add appends name = v, split into chunks: name holds the first 64 bytes,
// name.1, name.2, … the next 64 each. libLua's long and setlong read and
// write the same form, record.get reads it.
func (fs *fields) add(name, v string) {
	if len(v) <= chunk || len(v) > maxSplit {
		*fs = append(*fs, name, v)
		return
	}
	*fs = append(*fs, name, v[:chunk])
	for i := 1; i*chunk < len(v); i++ {
		*fs = append(*fs, name+"."+strconv.Itoa(i), v[i*chunk:min((i+1)*chunk, len(v))])
	}
}

// record holds a record's fields as HGETALL returned them.
type record map[string]string

// get returns the value of field name with its chunks joined, as libLua's
// long does: a piece of exactly 64 bytes may be followed by another.
func (r record) get(name string) (string, bool) {
	v, ok := r[name]
	if !ok || len(v) != chunk {
		return v, ok
	}
	var b strings.Builder
	b.WriteString(v)
	for i := 1; ; i++ {
		more, ok := r[name+"."+strconv.Itoa(i)]
		if !ok {
			break
		}
		b.WriteString(more)
		if len(more) != chunk {
			break
		}
	}
	return b.String(), true
}

// str returns the value of field name, "" when there is none.
func (r record) str(name string) string {
	v, _ := r.get(name)
	return v
}

// encodeHash returns the stored form of a payload hash: "h" and the 32
// bytes of a lowercase hex SHA-256, or "=" and any other text as it is.
// Distinct texts have distinct forms, so the claim compares forms.
func encodeHash(s string) string {
	if len(s) == 64 && isLowerHex(s) {
		b, _ := hex.DecodeString(s)
		return "h" + string(b)
	}
	return "=" + s
}

// decodeHash undoes encodeHash.
func decodeHash(v string) string {
	switch {
	case strings.HasPrefix(v, "h"):
		return hex.EncodeToString([]byte(v[1:]))
	case strings.HasPrefix(v, "="):
		return v[1:]
	}
	return v
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// frozen is the JSON of field "j": what never changes after Put but by an
// edit (the claim script writes it whole, as Go built it), and no script
// reads. The rest of the approval is in fields of its own, or (id)
// in the key.
type frozen struct {
	Calls   []frozenCall  `json:"c"`
	Risk    approval.Risk `json:"r,omitempty"`
	Summary string        `json:"s,omitempty"`
	Preview string        `json:"p,omitempty"`
	Reason  string        `json:"re,omitempty"`
	// ReasonZH is the reason in Chinese.
	ReasonZH string `json:"rz,omitempty"`
	// SummaryZH, PreviewZH: the summary and preview in Chinese; About,
	// AboutZH: what the call does for its approver.
	SummaryZH string `json:"sz,omitempty"`
	PreviewZH string `json:"pz,omitempty"`
	// RequesterName is the requester's name as the platform gave it.
	RequesterName string `json:"rn,omitempty"`
	About         string `json:"ab,omitempty"`
	AboutZH       string `json:"abz,omitempty"`
	// CreatedAt: LifeS is ExpiresAt - CreatedAt in seconds when that is
	// whole seconds (it is a timeout: nearly always), else Life in
	// nanoseconds, else (the difference overflows a Duration) Created is
	// CreatedAt itself.
	LifeS   *int64         `json:"l,omitempty"`
	Life    *time.Duration `json:"ln,omitempty"`
	Created *time.Time     `json:"t,omitempty"`
	// Zone is ExpiresAt's offset from UTC in seconds (fields e and n hold
	// the instant); CZone is CreatedAt's when it differs from Zone.
	Zone  int           `json:"z,omitempty"`
	CZone *int          `json:"cz,omitempty"`
	Grant time.Duration `json:"g,omitempty"`
	// Escalation is the approval's timed escalation (the steps taken
	// are counted in field ed).
	Escalation []approval.Escalation `json:"es,omitempty"`
	// Reminders is approval.Approval.Reminders (how many are behind it is
	// field rd).
	Reminders []float64 `json:"rm,omitempty"`
	// Privacy is approval.Approval.Privacy, absent when empty; Group
	// reports a group chat (approval.Approval.Group). No script reads
	// them: the router and the channels do.
	Privacy approval.Privacy `json:"pv,omitempty"`
	Group   bool             `json:"gp,omitempty"`
	// Trace is approval.Approval.Trace (a traceparent), absent when
	// tracing is off.
	Trace string `json:"tp,omitempty"`
	// Standing is the standing rule the card offers
	// (approval.Approval.Standing); the engine reads it before a claim
	// that chooses it, no script does.
	Standing *approval.Standing `json:"st,omitempty"`
}

type frozenCall struct {
	Tool string          `json:"t"`
	Args json.RawMessage `json:"a"`
	// Def is the call's tool definition digest, if it pins one.
	Def string `json:"d,omitempty"`
	// Hash is the call's payload hash when it is not the one its tool,
	// arguments and definition give (approval.Call.Hash), which it
	// nearly always is.
	Hash    *string `json:"h,omitempty"`
	Summary string  `json:"s,omitempty"`
	CallID  string  `json:"i,omitempty"`
	// Edited is approval.Call.Edited (an edit rewrites field j).
	Edited string `json:"e,omitempty"`
	// SummaryZH is the call's summary in Chinese.
	SummaryZH string `json:"sz,omitempty"`
}

// encodeRecord returns the fields of a new record for a, all but "s"
// (state), which the put script sets.
func encodeRecord(a *approval.Approval) (fields, error) {
	j, err := encodeFrozen(a)
	if err != nil {
		return nil, err
	}

	fs := make(fields, 0, 32)
	fs.add("h", encodeHash(a.PayloadSHA256))
	if a.Channel != "" {
		fs.add("ch", a.Channel)
	}
	if a.ChatID != "" {
		fs.add("ci", a.ChatID)
	}
	// The session is nearly always <channel>:<chat_id>, with the user or
	// thread after that in some scopes: only what is not said already.
	if tail, ok := strings.CutPrefix(string(a.Session), a.Channel+":"+a.ChatID); ok {
		if tail != "" {
			fs.add("K", tail)
		}
	} else {
		fs.add("k", string(a.Session))
	}
	if p := a.ApproveIn; p != nil {
		// The approvers' chat: the claim and resolve scripts read it
		// (the approver rule "chat"), so it is not in j.
		fs.add("ac", p.Channel)
		fs.add("ai", p.ChatID)
		if p.Direct {
			fs = append(fs, "ad", "1")
		}
	}
	ms, ns := splitTime(a.ExpiresAt)
	fs = append(fs, "e", ms, "n", ns)
	if a.Requester != "" {
		fs.add("r", string(a.Requester))
	}
	if a.IdempotencyKey != "" {
		fs.add("i", a.IdempotencyKey)
	}
	if a.Approvers.Mode != approval.ApproverRequester {
		fs.add("m", string(a.Approvers.Mode))
	}
	if len(a.Approvers.Users) > 0 {
		users, err := json.Marshal(a.Approvers.Users)
		if err != nil {
			return nil, err
		}
		fs.add("u", string(users))
	}
	if a.Approvers.NotRequester {
		fs = append(fs, "x", "1")
	}
	if a.Approvers.Quorum > 1 {
		fs = append(fs, "qu", strconv.Itoa(a.Approvers.Quorum))
	}
	fs.add("j", string(j))
	if a.Escalated > 0 {
		ed, eu, ep, err := escalatedFields(a)
		if err != nil {
			return nil, err
		}
		fs = append(fs, "ed", ed)
		if eu != "" {
			fs.add("eu", eu)
		}
		if ep != "" {
			fs.add("ep", ep)
		}
	}
	if a.Reminded > 0 {
		fs = append(fs, "rd", strconv.Itoa(a.Reminded))
	}
	for i, c := range a.Cards {
		v, err := cardValue(c, a.Channel, a.ChatID)
		if err != nil {
			return nil, err
		}
		fs.add("c"+strconv.Itoa(i+1), v)
	}
	return fs, nil
}

// escalatedFields returns what the fields ed, eu and ep hold for a: the
// steps of its escalation taken, their people (a JSON array, "" when
// none) and the chats of those of mode chat ("<channel>\n<chat id>", a
// JSON array, "" when none), which the claim and resolve scripts read.
func escalatedFields(a *approval.Approval) (ed, eu, ep string, err error) {
	if users := a.EscalationUsers(); len(users) > 0 {
		b, err := json.Marshal(users)
		if err != nil {
			return "", "", "", err
		}
		eu = string(b)
	}
	if places := a.EscalationPlaces(); len(places) > 0 {
		s := make([]string, len(places))
		for i, p := range places {
			s[i] = p.Channel + "\n" + p.ChatID
		}
		b, err := json.Marshal(s)
		if err != nil {
			return "", "", "", err
		}
		ep = string(b)
	}
	return strconv.Itoa(a.Escalated), eu, ep, nil
}

// encodeFrozen is the JSON of a's field "j".
func encodeFrozen(a *approval.Approval) ([]byte, error) {
	fr := frozen{Risk: a.Risk, Summary: a.Summary, Preview: a.Preview, Reason: a.Reason, ReasonZH: a.ReasonZH,
		SummaryZH: a.SummaryZH, PreviewZH: a.PreviewZH, About: a.About, AboutZH: a.AboutZH, RequesterName: a.RequesterName, Grant: a.GrantWindow,
		Escalation: a.Escalation, Reminders: a.Reminders, Privacy: a.Privacy, Group: a.Group, Trace: a.Trace, Standing: a.Standing}
	if a.Calls != nil {
		fr.Calls = make([]frozenCall, len(a.Calls))
	}
	for i, c := range a.Calls {
		// The arguments exactly as Get will return them (json.Marshal
		// compacts a RawMessage), so that Get recomputes the same hash.
		args, err := json.Marshal(c.Args)
		if err != nil {
			return nil, err
		}
		fc := frozenCall{Tool: c.Tool, Args: args, Def: c.Definition, Summary: c.Summary, SummaryZH: c.SummaryZH, CallID: c.CallID, Edited: c.Edited}
		if (approval.Call{Tool: c.Tool, Args: args, Definition: c.Definition}).Hash() != c.PayloadSHA256 {
			h := c.PayloadSHA256
			fc.Hash = &h
		}
		fr.Calls[i] = fc
	}
	if life := a.ExpiresAt.Sub(a.CreatedAt); !a.ExpiresAt.Add(-life).Equal(a.CreatedAt) {
		t := a.CreatedAt
		fr.Created = &t
	} else if life%time.Second == 0 {
		sec := int64(life / time.Second)
		fr.LifeS = &sec
	} else {
		fr.Life = &life
	}
	_, fr.Zone = a.ExpiresAt.Zone()
	if _, cz := a.CreatedAt.Zone(); cz != fr.Zone {
		fr.CZone = &cz
	}
	return json.Marshal(&fr)
}

// cardJSON is the stored form of a card: a JSON array [channel, chat id,
// message id], and "p" fourth for a private card (approval.CardRef.Private).
func cardJSON(c approval.CardRef) (string, error) {
	s := []string{c.Channel, c.ChatID, c.MessageID}
	if c.Private {
		s = append(s, "p")
	}
	b, err := json.Marshal(s)
	return string(b), err
}

// cardValue is the stored form of a card of an approval in channel ch and
// chat ci: "=" and the message id when the card is in that chat and not
// private (as nearly every card is), else its JSON. The add-cards script
// decides the same way (AddCards hands it no channel for a private card).
func cardValue(c approval.CardRef, ch, ci string) (string, error) {
	if c.Channel == ch && c.ChatID == ci && !c.Private {
		return "=" + c.MessageID, nil
	}
	return cardJSON(c)
}

// decodeCard undoes cardValue.
func decodeCard(v, ch, ci string) (approval.CardRef, error) {
	if m, ok := strings.CutPrefix(v, "="); ok {
		return approval.CardRef{Channel: ch, ChatID: ci, MessageID: m}, nil
	}
	var s []string
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return approval.CardRef{}, err
	}
	if len(s) < 3 {
		return approval.CardRef{}, fmt.Errorf("card %q: want [channel, chat id, message id]", v)
	}
	return approval.CardRef{Channel: s[0], ChatID: s[1], MessageID: s[2], Private: len(s) > 3 && s[3] == "p"}, nil
}

// withZone returns t at the UTC offset off as the JSON decoding of the
// RFC 3339 text of such a time would: in UTC for offset 0, in time.Local
// when that has the offset at t, else in a fixed zone without a name.
func withZone(t time.Time, off int) time.Time {
	if off == 0 {
		return t.UTC()
	}
	l := t.In(time.Local)
	if _, o := l.Zone(); o == off {
		return l
	}
	return t.In(time.FixedZone("", off))
}

// fieldsOf converts a flat HGETALL reply of a script into a record.
func fieldsOf(v any) (record, error) {
	arr, ok := v.([]any)
	if !ok || len(arr)%2 != 0 {
		return nil, fmt.Errorf("record reply is %T of %d", v, len(arr))
	}
	m := make(record, len(arr)/2)
	for i := 0; i < len(arr); i += 2 {
		k, ok1 := arr[i].(string)
		val, ok2 := arr[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("record field %d is %T/%T", i/2, arr[i], arr[i+1])
		}
		m[k] = val
	}
	return m, nil
}

// decodeReply decodes the HGETALL reply of a script for the record of id.
func decodeReply(id approval.ID, v any) (*approval.Approval, error) {
	f, err := fieldsOf(v)
	if err != nil {
		return nil, err
	}
	return decodeRecord(id, f)
}

// decodeRecord builds the approval id from its record's fields.
func decodeRecord(id approval.ID, f record) (*approval.Approval, error) {
	a := &approval.Approval{ID: id}
	if err := decodeFixed(a, f); err != nil {
		return nil, err
	}
	a.State = approval.State(f["s"])
	if v, ok := f.get("by"); ok {
		a.DecidedBy = approval.UserID(v)
	}
	if v, ok := f.get("via"); ok {
		a.DecidedVia = approval.Source(v)
	}
	if v, ok := f.get("cm"); ok {
		a.Comment = v
	}
	if v, ok := f.get("gr"); ok {
		a.Grant = approval.GrantChoice(v)
	}
	if v, ok := f.get("v"); ok {
		a.Verdicts = approval.Verdicts(v)
	}
	if v, ok := f.get("ph"); ok {
		a.ProposedSHA256 = decodeHash(v)
	}
	if v, ok := f.get("ed"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("record field ed: %q is not a count", v)
		}
		a.Escalated = n
	}
	if v, ok := f.get("rd"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("record field rd: %q is not a count", v)
		}
		a.Reminded = n
	}
	if v, ok := f.get("at"); ok {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, fmt.Errorf("record field at: %w", err)
		}
		a.DecidedAt = t
	}
	if v, ok := f.get("o"); ok {
		var o approval.Outcome
		if err := json.Unmarshal([]byte(v), &o); err != nil {
			return nil, fmt.Errorf("record field o: %w", err)
		}
		a.Outcome = &o
	}
	for i := 1; ; i++ {
		v, ok := f.get("y" + strconv.Itoa(i))
		if !ok {
			break
		}
		var vote approval.Vote
		if err := json.Unmarshal([]byte(v), &vote); err != nil {
			return nil, fmt.Errorf("record field y%d: %w", i, err)
		}
		a.Votes = append(a.Votes, vote)
	}
	for i := 1; ; i++ {
		v, ok := f.get("c" + strconv.Itoa(i))
		if !ok {
			break
		}
		c, err := decodeCard(v, a.Channel, a.ChatID)
		if err != nil {
			return nil, fmt.Errorf("record field c%d: %w", i, err)
		}
		a.Cards = append(a.Cards, c)
	}
	return a, nil
}

// decodeFixed fills in what Put wrote and nothing changes afterwards.
func decodeFixed(a *approval.Approval, f record) error {
	var fr frozen
	if err := json.Unmarshal([]byte(f.str("j")), &fr); err != nil {
		return fmt.Errorf("record field j: %w", err)
	}
	a.Escalation = fr.Escalation
	a.Trace = fr.Trace
	a.Reminders = fr.Reminders
	a.Channel, a.ChatID = f.str("ch"), f.str("ci")
	if k, ok := f.get("k"); ok {
		a.Session = approval.SessionKey(k)
	} else {
		a.Session = approval.SessionKey(a.Channel + ":" + a.ChatID + f.str("K"))
	}
	if ai, ok := f.get("ai"); ok {
		a.ApproveIn = &approval.Place{Channel: f.str("ac"), ChatID: ai, Direct: f["ad"] == "1"}
	}
	a.Requester = approval.UserID(f.str("r"))
	a.Approvers.Mode = approval.ApproverRequester
	if m, ok := f.get("m"); ok {
		a.Approvers.Mode = approval.ApproverMode(m)
	}
	if u, ok := f.get("u"); ok {
		if err := json.Unmarshal([]byte(u), &a.Approvers.Users); err != nil {
			return fmt.Errorf("record field u: %w", err)
		}
	}
	a.Approvers.NotRequester = f["x"] == "1"
	if q, ok := f.get("qu"); ok {
		n, err := strconv.Atoi(q)
		if err != nil {
			return fmt.Errorf("record field qu: %w", err)
		}
		a.Approvers.Quorum = n
	}
	a.PayloadSHA256 = decodeHash(f.str("h"))
	a.IdempotencyKey = f.str("i")
	ms, err1 := strconv.ParseInt(f["e"], 10, 64)
	ns, err2 := strconv.ParseInt(f["n"], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("record fields e, n: %w", err)
	}
	a.ExpiresAt = withZone(time.Unix(ms/1000, (ms%1000)*1e6+ns), fr.Zone)
	switch {
	case fr.Created != nil:
		a.CreatedAt = *fr.Created
	case fr.LifeS != nil || fr.Life != nil:
		var life time.Duration
		if fr.LifeS != nil {
			life = time.Duration(*fr.LifeS) * time.Second
		} else {
			life = *fr.Life
		}
		cz := fr.Zone
		if fr.CZone != nil {
			cz = *fr.CZone
		}
		a.CreatedAt = withZone(a.ExpiresAt.Add(-life), cz)
	}
	if fr.Calls != nil {
		a.Calls = make([]approval.Call, len(fr.Calls))
	}
	for i, c := range fr.Calls {
		call := approval.Call{Tool: c.Tool, Args: c.Args, Definition: c.Def, Summary: c.Summary, SummaryZH: c.SummaryZH, CallID: c.CallID, Edited: c.Edited}
		call.PayloadSHA256 = call.Hash()
		if c.Hash != nil {
			call.PayloadSHA256 = *c.Hash
		}
		a.Calls[i] = call
	}
	a.Risk, a.Summary, a.Preview, a.Reason, a.ReasonZH, a.GrantWindow = fr.Risk, fr.Summary, fr.Preview, fr.Reason, fr.ReasonZH, fr.Grant
	a.SummaryZH, a.PreviewZH, a.About, a.AboutZH, a.RequesterName = fr.SummaryZH, fr.PreviewZH, fr.About, fr.AboutZH, fr.RequesterName
	a.Privacy, a.Group, a.Standing = fr.Privacy, fr.Group, fr.Standing
	return nil
}
