package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// GrantChoice is what an approver chose, approving a MEDIUM call that may
// grant its session a window (Verdict.Grantable): run it this once, or
// allow the same tool and payload for the grant window. It travels with the
// decision (Decision.Grant), the claim records it (Approval.Grant) and the
// confirm audit record says the choice that applied.
type GrantChoice string

// Grant choices.
const (
	// GrantUnset is a plain 确认 / approve with no choice (a typed reply,
	// an old card's button, an API request without "grant"): the default
	// applies, which is GrantSession, as before the choice existed.
	GrantUnset GrantChoice = ""
	// GrantOnce runs the calls this once; nothing is granted.
	GrantOnce GrantChoice = "once"
	// GrantSession runs them and grants the requester's session the same
	// tool and payload for the approval's GrantWindow.
	GrantSession GrantChoice = "session"
)

// ParseGrantChoice reads "once", "session", "always" or "" (unset). Anything else is
// an error: a client that names a choice must name one that exists.
func ParseGrantChoice(s string) (GrantChoice, error) {
	switch c := GrantChoice(strings.TrimSpace(s)); c {
	case GrantUnset, GrantOnce, GrantSession, GrantAlways:
		return c, nil
	}
	return "", fmt.Errorf("unknown grant %q (want once, session or always)", s)
}

// For returns the choice that applies to approval a: GrantAlways when c
// is that and a offers a standing rule; else "" when a grants no window
// (not MEDIUM, strict mode, grants off: there is nothing to choose), else
// c, with GrantUnset meaning GrantSession.
func (c GrantChoice) For(a *Approval) GrantChoice {
	if c == GrantAlways && a != nil && a.Standing != nil {
		return GrantAlways
	}
	if a == nil || !a.Grantable() {
		return GrantUnset
	}
	if c == GrantUnset || c == GrantAlways {
		return GrantSession
	}
	return c
}

// Grantable reports whether approving a may grant its session a window:
// a MEDIUM approval with a positive GrantWindow. Its card offers the two
// approve buttons (仅本次 / 本会话允许).
func (a *Approval) Grantable() bool {
	return a != nil && a.GrantWindow > 0 && a.Risk == RiskMedium
}

// Grant is one live session grant: a MEDIUM call approved with the session
// choice runs without asking again, for the same session, requester, tool
// and payload, until ExpiresAt. It remembers who approved it and when, so
// a call it lets run says so in the chat ("auto-approved: same request
// approved by 张三 4 minutes ago"), and /grants lists it.
type Grant struct {
	// Session, User, Tool and PayloadSHA256 are what the grant covers
	// (GrantKey of them is its key).
	Session       SessionKey `json:"session"`
	User          UserID     `json:"user"`
	Tool          string     `json:"tool"`
	PayloadSHA256 string     `json:"hash"`
	// Summary is a short description of the payload (the call's summary,
	// sanitised as the card's was), for /grants.
	Summary string `json:"summary,omitempty"`
	// ApprovalID is the approval whose decision granted it.
	ApprovalID ID `json:"approval_id"`
	// ApprovedBy and ApprovedAt are who approved it and when.
	ApprovedBy UserID    `json:"by"`
	ApprovedAt time.Time `json:"at"`
	// ExpiresAt is when it ends (the store ends it by its own TTL, set
	// from the same window).
	ExpiresAt time.Time `json:"expires_at"`
	// Agent and Rules, on a standing rule (StandingRule; an approver's
	// GrantAlways), are the agent it allows and the rules of Claude
	// Code's vocabulary it allows (any of them); the grant then matches
	// the agent's calls by its rules (package gate), not by Tool and
	// PayloadSHA256 (the rules' Standing.Hash), and Summary writes them.
	Agent string           `json:"agent,omitempty"`
	Rules []PermissionRule `json:"rules,omitempty"`
}

// Key returns the grant's store key: GrantKey of its session, user, tool
// and payload hash.
func (g Grant) Key() string {
	return GrantKey(CallInfo{Session: g.Session, User: g.User, Tool: g.Tool, Hash: g.PayloadSHA256})
}

// GrantID returns a short, fixed-length name of a grant key (32 hex digits
// of its SHA-256), which a store may use in its own keys.
func GrantID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// GrantStore is the part of Store that keeps grants. Every replica sees
// the same grants: a grant recorded or revoked on one is live or gone on
// all of them at once (redisstore keeps them in Redis).
type GrantStore interface {
	// PutGrant records g for ttl (by the store's clock, as every TTL of
	// the store), replacing a grant with the same key; g.ExpiresAt is
	// what the grant says of itself (the engine's clock), for showing.
	// A ttl <= 0 records nothing.
	PutGrant(ctx context.Context, g Grant, ttl time.Duration) error
	// GrantFor returns the session's live grant with key (GrantKey), or
	// nil when there is none.
	GrantFor(ctx context.Context, s SessionKey, key string) (*Grant, error)
	// Grants returns the session's live grants, oldest approval first
	// (then by key), so that their numbers in /grants stay put while
	// newer ones are added.
	Grants(ctx context.Context, s SessionKey) ([]Grant, error)
	// Revoke removes the session's grants with those keys (GrantKey),
	// or every grant of the session when keys is empty, and reports how
	// many live grants it removed.
	Revoke(ctx context.Context, s SessionKey, keys ...string) (int, error)
}

// SortGrants orders grants as GrantStore.Grants returns them: oldest
// approval first, then by key.
func SortGrants(gs []Grant) {
	slices.SortFunc(gs, func(a, b Grant) int {
		if c := a.ApprovedAt.Compare(b.ApprovedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key(), b.Key())
	})
}

// SortByCreation orders approvals oldest first: by CreatedAt, then id.
func SortByCreation(as []*Approval) {
	slices.SortFunc(as, func(a, b *Approval) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
}
