package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
)

// Conversation is what the agent remembers of one session.
type Conversation struct {
	// Messages is the history, oldest first, without the system prompt.
	Messages []Message `json:"messages"`
	// Suspended are the turns of this session that stopped at an approval
	// still open when they stopped (their replica died or restarted, or the
	// turn ran out of time), oldest first. Each is taken off when its
	// approval's outcome is written into Messages: by the turn that resumes
	// it (Loop.Resume), or by the next turn of the session when no resume
	// came. At most maxSuspended are kept.
	Suspended []Suspension `json:"suspended,omitempty"`
}

// History keeps conversations. MemoryHistory serves one process;
// RedisHistory lets several replicas share them.
type History interface {
	Load(ctx context.Context, s approval.SessionKey) (Conversation, error)
	Save(ctx context.Context, s approval.SessionKey, c Conversation) error
}

// Trim caps c to about max messages, dropping the oldest, and never leaves
// a tool message or an assistant's tool calls without its partner: the kept
// history starts at a user message (with the updates on earlier approvals
// recorded just before it, when they fit). The current turn (the last user
// message and everything after it, with the updates just before it) is
// always kept whole, even when it alone is longer than max.
func (c *Conversation) Trim(max int) {
	n := len(c.Messages)
	if max <= 0 || n <= max {
		return
	}
	last := -1
	for i := n - 1; i >= 0; i-- {
		if c.Messages[i].Role == RoleUser {
			last = i
			break
		}
	}
	start := n - max
	switch {
	case last < 0:
		// No user message at all: keep the newest messages, without a
		// leading tool reply whose call was cut.
		for start < n && c.Messages[start].Role == RoleTool {
			start++
		}
	case start > last:
		// The current turn alone is longer than max: keep it whole.
		start = last
		for start > 0 && c.Messages[start-1].Role == RoleSystem {
			start--
		}
	default:
		// Start at the first user message within the cap, or at the
		// updates that lead to it.
		i := start
		for c.Messages[i].Role != RoleUser {
			i++
		}
		for j := i; j > start && c.Messages[j-1].Role == RoleSystem; j-- {
			i = j - 1
		}
		start = i
	}
	c.Messages = append([]Message(nil), c.Messages[start:]...)
}

// MemoryHistory is an in-process History.
type MemoryHistory struct {
	mu sync.Mutex
	m  map[approval.SessionKey][]byte
}

// NewMemoryHistory returns an empty in-process history.
func NewMemoryHistory() *MemoryHistory {
	return &MemoryHistory{m: map[approval.SessionKey][]byte{}}
}

// Load returns the session's conversation (empty if none).
func (h *MemoryHistory) Load(ctx context.Context, s approval.SessionKey) (Conversation, error) {
	var c Conversation
	b, _ := h.raw(ctx, s)
	if b == nil {
		return c, nil
	}
	err := json.Unmarshal(b, &c)
	return c, err
}

// raw returns the session's conversation as stored (nil if none).
func (h *MemoryHistory) raw(_ context.Context, s approval.SessionKey) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[s], nil
}

// Save replaces the session's conversation.
func (h *MemoryHistory) Save(ctx context.Context, s approval.SessionKey, c Conversation) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.m[s] = b
	h.mu.Unlock()
	return nil
}

// RedisHistory keeps each conversation as one JSON value with a TTL.
type RedisHistory struct {
	client redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// NewRedisHistory returns a History in Redis under prefix+"hist:", each
// conversation expiring ttl after its last turn (default 7 days).
func NewRedisHistory(client redis.UniversalClient, prefix string, ttl time.Duration) *RedisHistory {
	if ttl <= 0 {
		ttl = 7 * 24 * time.Hour
	}
	return &RedisHistory{client: client, prefix: prefix + "hist:", ttl: ttl}
}

// Load returns the session's conversation (empty if none).
func (h *RedisHistory) Load(ctx context.Context, s approval.SessionKey) (Conversation, error) {
	var c Conversation
	b, err := h.raw(ctx, s)
	if err != nil || b == nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Conversation{}, fmt.Errorf("load history: %w", err)
	}
	return c, nil
}

// raw returns the session's conversation as stored (nil if none).
func (h *RedisHistory) raw(ctx context.Context, s approval.SessionKey) ([]byte, error) {
	b, err := h.client.Get(ctx, h.prefix+string(s)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load history: %w", err)
	}
	return b, nil
}

// Save replaces the session's conversation.
func (h *RedisHistory) Save(ctx context.Context, s approval.SessionKey, c Conversation) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := h.client.Set(ctx, h.prefix+string(s), b, h.ttl).Err(); err != nil {
		return fmt.Errorf("save history: %w", err)
	}
	return nil
}

var (
	_ History = (*MemoryHistory)(nil)
	_ History = (*RedisHistory)(nil)
)
