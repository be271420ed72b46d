package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/words"
)

// User is who a bearer token stands for.
type User struct {
	// ID names the user within the tenant, e.g. "alice". It must not
	// contain '/'.
	ID string `json:"id" mapstructure:"id"`
	// Tenant is the user's organisation (a family, a team): users never
	// see or decide another tenant's approvals. It must not contain '/'.
	Tenant string `json:"tenant" mapstructure:"tenant"`
}

// UserID is how the user appears in approvals and the audit trail:
// "tenant/id". Approver lists in the policy name API users this way.
func (u User) UserID() string { return u.Tenant + "/" + u.ID }

// LocalUser is the one user of a zero-config API on loopback.
var LocalUser = User{ID: "local", Tenant: "local"}

// AuditReader returns the audit trail of one approval. cmd/bot supplies one
// that reads the configured audit sink.
type AuditReader interface {
	// Records returns the audit records of the approval, oldest first.
	Records(ctx context.Context, approvalID string) ([]audit.Record, error)
}

// Config is the YAML section api: of the bot's config, plus the parts
// cmd/bot wires in (tagged "-").
type Config struct {
	// Tokens maps a bearer token (a secret: set it from the environment or
	// a file) to the user it authenticates. Requests send it as
	// "Authorization: Bearer <token>".
	Tokens map[string]User `json:"tokens" mapstructure:"tokens"`
	// AllowAnonymousLocal lets a request without an Authorization header
	// in as LocalUser ("local" in tenant "local") when it comes from a
	// loopback address: the zero-config setup on 127.0.0.1. A request
	// with a wrong bearer token is refused whatever this says.
	AllowAnonymousLocal bool `json:"allow_anonymous_local" mapstructure:"allow_anonymous_local"`
	// MaxPendingPerUser caps the approvals one user may have waiting at
	// once: a message that could start another gets 429 rate_limited (a
	// typed 确认 / 取消 on a conversation with a pending action is always
	// let through). 0 means the default, 10; negative disables the cap.
	// The cap is enforced per replica: the count and the reservation of a
	// place are one step among the requests one process serves (messages
	// in flight count as pending), but replicas do not see each other's
	// requests in flight, so requests of one user reaching several
	// replicas at the same moment can together exceed it.
	MaxPendingPerUser int `json:"max_pending_per_user" mapstructure:"max_pending_per_user"`
	// TurnTimeout is how long POST /agent/chat waits for the turn (or for
	// the rest of it, after a confirmation) before it answers with what it
	// has and "incomplete": true. The turn itself goes on. Default 60s.
	TurnTimeout time.Duration `json:"turn_timeout" mapstructure:"turn_timeout"`
	// TokenRetention is how long a pending-action token is remembered after
	// its approval expires, so that a late confirmation gets 410 expired
	// rather than 404 not_found. Default 24h.
	TokenRetention time.Duration `json:"token_retention" mapstructure:"token_retention"`
	// MaxMessageBytes caps the request body of POST /agent/chat.
	// Default 64 KiB.
	MaxMessageBytes int64 `json:"max_message_bytes" mapstructure:"max_message_bytes"`
	// Lang is the language of the words the API writes itself (the
	// message of an error, the text of an answer that waits or stopped
	// waiting) for a request whose Accept-Language header names no
	// language of the catalogue: "zh" or "en" (words.Parse reads it).
	// Default "en"; cmd/bot sets approval.lang. Error codes, statuses
	// and field names never change with it.
	Lang string `json:"lang" mapstructure:"lang"`

	// TokenStore keeps the pending-action tokens; every replica must share
	// it (RedisTokens when Redis is configured). Default: a MemoryTokens
	// (single node).
	TokenStore TokenStore `json:"-" mapstructure:"-"`
	// Audit serves the audit trail of GET /api/approvals/{id}. Nil: the
	// answer carries no trail.
	Audit AuditReader `json:"-" mapstructure:"-"`
	// Clock must be the approval engine's clock: it stamps messages and
	// judges token lifetimes. Default the wall clock.
	Clock clock.Clock `json:"-" mapstructure:"-"`
}

// Defaults.
const (
	DefaultMaxPendingPerUser = 10
	DefaultTurnTimeout       = 60 * time.Second
	DefaultTokenRetention    = 24 * time.Hour
	DefaultMaxMessageBytes   = 64 << 10
)

// withDefaults fills in defaults and checks the config; every problem is
// reported, each naming its field.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	for tok, u := range c.Tokens {
		name := "tokens.<secret>"
		if strings.TrimSpace(tok) == "" {
			errs = append(errs, errors.New("tokens: an empty bearer token"))
		}
		if u.ID == "" || strings.Contains(u.ID, "/") {
			errs = append(errs, fmt.Errorf("%s.id: %q must be non-empty and hold no '/'", name, u.ID))
		}
		if u.Tenant == "" || strings.Contains(u.Tenant, "/") {
			errs = append(errs, fmt.Errorf("%s.tenant: %q must be non-empty and hold no '/'", name, u.Tenant))
		}
	}
	if c.MaxPendingPerUser == 0 {
		c.MaxPendingPerUser = DefaultMaxPendingPerUser
	}
	if c.TurnTimeout < 0 || c.TokenRetention < 0 || c.MaxMessageBytes < 0 {
		errs = append(errs, errors.New("turn_timeout, token_retention and max_message_bytes must not be negative"))
	}
	if c.TurnTimeout == 0 {
		c.TurnTimeout = DefaultTurnTimeout
	}
	if c.TokenRetention == 0 {
		c.TokenRetention = DefaultTokenRetention
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.Lang == "" {
		c.Lang = string(words.EN)
	}
	if l, err := words.Parse(c.Lang); err != nil {
		errs = append(errs, fmt.Errorf("lang: %w", err))
	} else {
		c.Lang = string(l)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.TokenStore == nil {
		c.TokenStore = NewMemoryTokens(c.Clock)
	}
	return c, errors.Join(errs...)
}
