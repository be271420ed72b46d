package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
)

// Edit before approve. A decision with Edits approves the calls with the
// arguments the approver changed. The engine asks its EditChecker (the
// agent's tool registry and policy, wired in cmd/bot) whether each edited
// call would be taken (its schema, the tool's own refusal), what it shows
// (its preview; for a SQL tool the blast radius is measured again) and
// what risk and approver rule the policy gives it. Rules:
//
//   - the approver must satisfy the approver rule of every edited call as
//     the policy gives it now, besides the approval's own (which the claim
//     judges): an edit that makes a call HIGH under high_needs_other cannot
//     be approved by the requester, who edits it; they are answered
//     unauthorized with who may, and the approval stays pending with its
//     proposed calls (another approver may approve it, or edit it the same
//     way and approve it);
//   - the claim binds the approval to the edited calls' hash atomically
//     (ClaimRequest.Edited), and keeps the proposed hash (ProposedSHA256);
//     the decider's PayloadSHA256 must be the proposed one (what they saw);
//   - the approval's risk becomes the highest of the edited calls' risks
//     and, in a batch, the proposed risk of the calls left alone; its
//     reason is the edited call's when that raised it;
//   - a tool another program defines keeps its pinned definition: the
//     edited call's hash is PinnedHash with the definition shown;
//   - each edited call says what changed (Call.Edited, "limit: 1000 →
//     10"), which its result carries to the model (Result.Edited).

// EditChecker checks the new arguments of a call an approver edits. The
// agent implements it (agent.EditChecker).
type EditChecker interface {
	// CheckEdit returns the edited call as the policy sees it, or an
	// error saying why the tool would not take args (in words the
	// approver can act on; no secret: it describes their own input).
	CheckEdit(ctx context.Context, a *Approval, c Call, args json.RawMessage) (EditedCall, error)
}

// EditedCall is what an EditChecker says of an edited call.
type EditedCall struct {
	// Args are the new arguments, canonical (Canonicalize).
	Args json.RawMessage
	// Summary is the call's preview with the new arguments (sanitised);
	// SummaryZH the same in Chinese, when the tool says it in both.
	Summary, SummaryZH string
	// Risk, Reason, ReasonZH and Approvers are the policy's verdict on the
	// new call (after its blast radius).
	Risk             Risk
	Reason, ReasonZH string
	Approvers        ApproverRule
}

// ErrEdit is the cause of an edit the engine refuses as invalid: no
// EditChecker, a call named twice or not at all, arguments the tool would
// not take, together with per-call choices.
var ErrEdit = errors.New("edit refused")

// ErrQuorumNoEdit refuses an edit, or a per-call decision that approves
// some calls and rejects others, of an approval whose rule needs several
// approvers: each approver approves what the card shows, as it is.
var ErrQuorumNoEdit = errors.New(words.In("en", words.QuorumNoEdit))

// MaxEditedNote bounds Call.Edited, in runes.
const MaxEditedNote = 300

// editDecision builds the approval an edit makes of the record. early is
// the outcome when the approval is missing or the approver may not approve
// the edited calls (audited as unauthorized); edited is nil when the edit
// changes nothing (a plain approve).
func (e *Engine) editDecision(ctx context.Context, id ID, d Decision) (_ Decision, edited *Approval, early *Outcome, err error) {
	const op = "approval.Decide"
	if d.Calls != nil {
		return d, nil, nil, E(op, errkind.Invalid, id, fmt.Errorf("%w: edits and per-call choices in one decision", ErrEdit))
	}
	if e.cfg.Editor == nil {
		return d, nil, nil, E(op, errkind.Invalid, id, fmt.Errorf("%w: editing is not available", ErrEdit))
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	a, err := e.cfg.Store.Get(cctx, id)
	if err != nil {
		if KindOf(err) == errkind.NotFound {
			o := e.outcome(StatusMissing, "")
			return d, nil, &o, nil
		}
		return d, nil, nil, err
	}
	d.Verb = Approve
	if a.Approvers.Needed() > 1 {
		return d, nil, nil, E(op, errkind.Invalid, id, ErrQuorumNoEdit)
	}
	if len(d.Edits) == 0 {
		return d, nil, nil, E(op, errkind.Invalid, id, fmt.Errorf("%w: no arguments", ErrEdit))
	}
	ed := a.Clone()
	changed, named := make([]bool, len(a.Calls)), make([]bool, len(a.Calls))
	previewOf, previewZHOf := make([]string, len(a.Calls)), make([]string, len(a.Calls))
	var rules []ApproverRule
	risk, raised := Risk(-1), EditedCall{}
	for k, args := range d.Edits {
		i := callIndex(a.Calls, k)
		if i < 0 {
			return d, nil, nil, E(op, errkind.Invalid, id, fmt.Errorf("%w: no call %q", ErrEdit, k))
		}
		if named[i] {
			return d, nil, nil, E(op, errkind.Invalid, id, fmt.Errorf("%w: call %d named twice", ErrEdit, i+1))
		}
		named[i] = true
		c := a.Calls[i]
		ec, err := e.cfg.Editor.CheckEdit(cctx, a, c, args)
		if err != nil {
			return d, nil, nil, E(op, errkind.Invalid, id, fmt.Errorf("%w: call %d (%s): %w", ErrEdit, i+1, c.Tool, err))
		}
		nc := c
		nc.Args = ec.Args
		nc.PayloadSHA256 = nc.Hash()
		if nc.PayloadSHA256 == c.PayloadSHA256 {
			continue // named, unchanged
		}
		first, _, _ := strings.Cut(strings.TrimSpace(ec.Summary), "\n")
		nc.Summary = redact.Cut(redact.Text(first), 200)
		nc.SummaryZH = ""
		if ec.SummaryZH != "" {
			firstZH, _, _ := strings.Cut(strings.TrimSpace(ec.SummaryZH), "\n")
			nc.SummaryZH = redact.Cut(redact.Text(firstZH), 200)
		}
		nc.Edited = describeEdit(c.Args, nc.Args)
		previewOf[i], previewZHOf[i] = ec.Summary, ec.SummaryZH
		ed.Calls[i], changed[i] = nc, true
		rules = append(rules, ec.Approvers)
		if ec.Risk > risk {
			risk, raised = ec.Risk, ec
		}
	}
	anyChanged := false
	for i := range ed.Calls {
		if changed[i] {
			anyChanged = true
		} else if a.Risk > risk {
			risk = a.Risk // a call left as proposed keeps the proposed risk
		}
	}
	if !anyChanged {
		d.Edits = nil
		return d, nil, nil, nil
	}
	if !a.AllowsIn(d.Actor, Approve, d.Channel, d.ChatID) {
		rules = nil // the claim refuses the actor by the approval's own rule, and audits it
	}
	for _, r := range rules {
		// The rule of the approval, with the edited call's rule in place
		// of its own (mayapprove.go): the people of an escalation step
		// taken may approve an edited call too, but never the requester
		// when the edited call's rule keeps them out (four eyes).
		if !a.allowsUnder(r, d.Actor, Approve, d.Channel, d.ChatID) {
			e.audit(a, audit.EventUnauthorized, d.Actor, d.Source, StatusUnauthorized, "edited call needs another approver")
			o := e.outcome(StatusUnauthorized, "")
			o.Content += r.AsideIn(e.cfg.Lang)
			o.Detail = r.DescribeIn(e.cfg.Lang)
			return d, nil, &o, nil
		}
	}
	ed.PayloadSHA256 = BatchHash(ed.Calls)
	if risk > a.Risk {
		ed.Reason, ed.ReasonZH = raised.Reason, raised.ReasonZH
	}
	ed.Risk = risk
	var previews, previewsZH []string
	for i, c := range ed.Calls {
		p, pz := previewOf[i], previewZHOf[i]
		if !changed[i] {
			p, pz = c.Summary, c.SummaryZH // (a batch's proposed preview is one text: its calls' first lines stand in)
		}
		if pz == "" {
			pz = p
		}
		if p != "" {
			previews = append(previews, p)
			previewsZH = append(previewsZH, pz)
		}
	}
	if len(ed.Calls) == 1 {
		ed.Summary, ed.SummaryZH = ed.Calls[0].Summary, ed.Calls[0].SummaryZH
	}
	ed.Preview = redact.Cut(redact.Text(strings.Join(previews, "\n\n")), 4000)
	ed.PreviewZH = ""
	if changedZH := slices.ContainsFunc(previewZHOf, func(s string) bool { return s != "" }); changedZH {
		ed.PreviewZH = redact.Cut(redact.Text(strings.Join(previewsZH, "\n\n")), 4000)
	}
	return d, ed, nil, nil
}

// describeEdit says what changed between two argument objects, key by key
// in order ("limit: 1000 → 10; table: added \"orders\""), each value as
// compact JSON cut to 60 runes, a secret-looking key's values redacted;
// "arguments changed" when either is not an object.
func describeEdit(old, new json.RawMessage) string {
	var o, n map[string]json.RawMessage
	if json.Unmarshal(old, &o) != nil || json.Unmarshal(new, &n) != nil {
		return "arguments changed"
	}
	keys := map[string]bool{}
	for k := range o {
		keys[k] = true
	}
	for k := range n {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	show := func(k string, v json.RawMessage) string {
		if redact.SecretKey(k) {
			return "<redacted>"
		}
		return redact.Cut(redact.Text(string(v)), 60)
	}
	var parts []string
	for _, k := range names {
		ov, inOld := o[k]
		nv, inNew := n[k]
		switch {
		case !inOld:
			parts = append(parts, k+": added "+show(k, nv))
		case !inNew:
			parts = append(parts, k+": removed (was "+show(k, ov)+")")
		case string(ov) != string(nv):
			parts = append(parts, k+": "+show(k, ov)+" → "+show(k, nv))
		}
	}
	if len(parts) == 0 {
		return "arguments changed"
	}
	return redact.Clean(strings.Join(parts, "; "), MaxEditedNote)
}
