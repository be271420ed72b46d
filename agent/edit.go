package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hitlbot/hitlbot/approval"
)

// EditChecker is the engine's approval.EditChecker: it checks the
// arguments an approver edits before approving as the loop checks a
// model's call (Registry.Check: the schema, then the tool's own refusal),
// canonicalises them, measures the call again when its tool is an Assessor
// (the blast radius: a SQL statement's rows), and asks the policy in force
// for the edited call's risk and approver rule. It never runs the tool.
// cmd/bot builds it with the registry and the policy, before the engine.
type EditChecker struct {
	// Tools is the registry the loop uses.
	Tools *Registry
	// Policy returns the policy in force (reloadable).
	Policy func() *approval.Policy
}

var _ approval.EditChecker = EditChecker{}

// CheckEdit implements approval.EditChecker.
func (e EditChecker) CheckEdit(ctx context.Context, a *approval.Approval, c approval.Call, args json.RawMessage) (approval.EditedCall, error) {
	if e.Tools == nil || e.Policy == nil {
		return approval.EditedCall{}, errors.New("no tools to check the edit with")
	}
	if _, err := e.Tools.Check(c.Tool, args); err != nil {
		return approval.EditedCall{}, err
	}
	t, ok := e.Tools.Get(c.Tool)
	if !ok {
		return approval.EditedCall{}, fmt.Errorf("unknown tool %q", c.Tool)
	}
	canon, err := approval.Canonicalize(args)
	if err != nil {
		return approval.EditedCall{}, fmt.Errorf("arguments of %s: %w", c.Tool, err)
	}
	var blast approval.Blast
	var preview approval.Words
	if as, ok := t.(Assessor); ok {
		blast, preview = as.Assess(ctx, canon)
	} else {
		preview = previewWords(ctx, t, canon)
	}
	info := approval.CallInfo{Session: a.Session, User: a.Requester, Tool: c.Tool, Effect: t.Effect(canon),
		Hash: approval.PayloadHash(c.Tool, canon), Confidence: 1, Blast: blast}
	if f, ok := AsForeign(t); ok {
		// The definition shown on the card stays pinned (approval.Call.Hash).
		info.EffectSource = f.EffectSource()
	}
	// No grant lets an edited call through: a person is deciding it now.
	v, err := e.Policy().Evaluate(info, func() (bool, error) { return false, nil })
	if err != nil {
		return approval.EditedCall{}, err
	}
	return approval.EditedCall{Args: canon, Summary: preview.EN, SummaryZH: preview.ZH, Risk: v.Risk, Reason: v.Reason, ReasonZH: v.ReasonZH, Approvers: v.Approvers}, nil
}
