package channels

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// Allow says who may use one channel at all (YAML channels.<name>.allow).
// The Router checks it before anything else: a message or click it refuses
// is not de-duplicated, queued or decided. The sender is told so with one
// sentence: a click as its outcome, a message in a direct chat every time,
// a message in a group at most once per RefusalNoticeInterval.
//
// A message or click is allowed when (Users is empty or lists its sender)
// AND (Chats is empty or lists its chat). An empty Allow lets everyone in,
// as before allow-lists existed.
type Allow struct {
	// Users lists the ids of the people who may use the channel; empty:
	// everyone. The id is the one the channel gives the sender: Feishu the
	// open_id (ou_…), DingTalk the staff id (senderStaffId / userId; the
	// sender id for external members), web the user its token maps to
	// ("local" for the anonymous local user), api "tenant/user" as its
	// token maps to ("local/local" anonymous), cli channels.cli.user (or
	// the OS user name).
	Users []string `json:"users" mapstructure:"users"`
	// Chats lists the chats in which the channel may be used; empty: every
	// chat. Feishu the chat_id (oc_…), DingTalk the conversationId (cid…;
	// a card click is checked with the chat the platform names for the
	// card), web "<user>/<session_id>", api "<tenant>/<user>/<conversation
	// id>", cli "cli". Web, api and cli chats are made by the client, so
	// Users is the useful list there.
	Chats []string `json:"chats" mapstructure:"chats"`
}

// Empty reports whether a lets everyone in.
func (a Allow) Empty() bool { return len(a.Users) == 0 && len(a.Chats) == 0 }

// Validate refuses an empty entry, or one with spaces around it (an id
// never has them, so the entry could never match).
func (a Allow) Validate() error {
	var errs []error
	check := func(field string, list []string) {
		for i, s := range list {
			switch {
			case strings.TrimSpace(s) == "":
				errs = append(errs, fmt.Errorf("allow.%s[%d]: %q is empty; an entry must be an id", field, i, s))
			case strings.TrimSpace(s) != s:
				errs = append(errs, fmt.Errorf("allow.%s[%d]: %q has spaces around it and would never match", field, i, s))
			}
		}
	}
	check("users", a.Users)
	check("chats", a.Chats)
	return errors.Join(errs...)
}

// allowSet is an Allow as sets, for the hot path.
type allowSet struct {
	users, chats map[string]struct{}
}

func newAllowSet(a Allow) allowSet {
	set := func(list []string) map[string]struct{} {
		if len(list) == 0 {
			return nil
		}
		m := make(map[string]struct{}, len(list))
		for _, s := range list {
			m[s] = struct{}{}
		}
		return m
	}
	return allowSet{users: set(a.Users), chats: set(a.Chats)}
}

func (s allowSet) allows(user approval.UserID, chat string) bool {
	if s.users != nil {
		if _, ok := s.users[string(user)]; !ok {
			return false
		}
	}
	if s.chats != nil {
		if _, ok := s.chats[chat]; !ok {
			return false
		}
	}
	return true
}

// allowsUser reports whether the Users list lets user in, whatever the
// chat: for a request that is in no chat (the HTTP API's reads).
func (s allowSet) allowsUser(user approval.UserID) bool {
	if s.users == nil {
		return true
	}
	_, ok := s.users[string(user)]
	return ok
}

// Admitter says who may use a channel at all (RouterConfig.Allow): a
// channel that serves requests of its own besides the messages and clicks
// it hands to the Router (the HTTP API's reads, decisions and cancels of
// approvals) asks it first, on every route. The Router is one.
type Admitter interface {
	// Admits reports whether channel's allow-list lets user in (its
	// Users; a request that names no chat is judged by them alone). A
	// refusal is counted and logged as the Router's own are.
	Admits(ctx context.Context, channel string, user approval.UserID) bool
}

var _ Admitter = (*Router)(nil)

// Admits reports whether channel's allow-list lets user in
// (Admitter). Nothing is answered to the person: the asking channel does.
func (r *Router) Admits(ctx context.Context, channel string, user approval.UserID) bool {
	if a, ok := r.allow[channel]; !ok || a.allowsUser(user) {
		return true
	}
	r.refuse(ctx, channel, user, "", r.log.With("channel", channel, "user_id", user))
	return false
}

// RefusalNoticeInterval is how often, at most, one person in one group chat
// of a channel is told that they may not use the bot (per replica), and how
// often such a refusal is logged at Info (else Debug): a refused sender's
// every message is refused and counted, but in a group answered only once
// in this interval, so that nobody can make the bot spam a group.
const RefusalNoticeInterval = 10 * time.Minute

// maxRefusalNotices bounds the memory of refusal notices: beyond it, the
// entries older than the interval are dropped, and if none is, a refusal
// goes unanswered (it is still logged and counted).
const maxRefusalNotices = 10000

// refusals remembers when each refused (channel, chat, user) was last told.
type refusals struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether the refused key should be told now, and notes it.
func (r *refusals) due(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.last[key]; ok && now.Sub(t) < RefusalNoticeInterval {
		return false
	}
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	if _, ok := r.last[key]; !ok && len(r.last) >= maxRefusalNotices {
		for k, t := range r.last {
			if now.Sub(t) >= RefusalNoticeInterval {
				delete(r.last, k)
			}
		}
		if len(r.last) >= maxRefusalNotices {
			return false
		}
	}
	r.last[key] = now
	return true
}
