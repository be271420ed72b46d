package gate

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// AgentConfig is one entry of agents: another agent that may ask for
// approval, and where its cards go.
type AgentConfig struct {
	// Name is shown on the card ("ci-claude asks to run Bash") and names
	// the agent's calls ("ci-claude/Bash"): 1 to 32 of a-z, 0-9, - and _.
	Name string `mapstructure:"name"`
	// TokenEnv names the environment variable holding the agent's bearer
	// token (at least 16 characters); never the token itself.
	TokenEnv string `mapstructure:"token_env"`
	// TokenFile is a file holding the token instead (surrounding white
	// space trimmed).
	TokenFile string `mapstructure:"token_file"`
	// ApproveIn is where the card goes.
	ApproveIn Place `mapstructure:"approve_in"`
	// Requester counts as the requester for the approver rules (the
	// requester rule, high_needs_other): a user id of ApproveIn's channel
	// (for api: the API user, without the tenant, which is ChatID's).
	// Empty: nobody is the requester, so a requester rule lets nobody
	// decide; name approvers (approval.policy.approvers) instead.
	Requester string `mapstructure:"requester"`
	// Policy maps tool patterns to a risk; see Rules. A call no pattern
	// matches is HIGH.
	Policy map[string]RuleConfig `mapstructure:"policy"`
	// MaxPending caps the agent's requests waiting for a decision on one
	// replica; more get 429. Default 20.
	MaxPending int `mapstructure:"max_pending"`
	// CallbackHosts are the hosts a request's callback_url may name
	// (https; http only for localhost). Empty: no callbacks.
	CallbackHosts []string `mapstructure:"callback_hosts"`
	// Timeout is how long the agent's approvals wait for a decision
	// before they expire, whatever approval.policy.timeouts says (a
	// person in a chat takes minutes): 1s to 24h. Default 30m.
	Timeout time.Duration `mapstructure:"timeout"`
	// HookTimeout bounds how long POST /hooks/claude holds Claude Code's
	// hook waiting for a decision; then it answers deny ("nobody decided
	// within …") and withdraws the approval: its cards say the agent
	// stopped waiting and was told no, and a late click runs nothing (the
	// same call asked again is a new approval). Keep it below the hook's own
	// timeout in .claude/settings.json: 1s to 1h. Default 9m (Claude
	// Code's default hook timeout is 10m).
	HookTimeout time.Duration `mapstructure:"hook_timeout"`
	// RuleWindow is how long a standing rule stands: when a hook
	// request carries a rule suggestion (Claude Code's
	// permission_suggestions, e.g. Bash(npm test:*)), its card offers
	// "always allow" it for this agent, and once an approver chose that,
	// the agent's calls the rule matches are allowed without a card for
	// this long, unless revoked (/revoke in the approvers' chat): 1m to
	// 8760h. Default 720h (30 days).
	RuleWindow time.Duration `mapstructure:"rule_window"`
}

// Defaults of AgentConfig.
const (
	// DefaultAgentTimeout is AgentConfig.Timeout's default.
	DefaultAgentTimeout = 30 * time.Minute
	// DefaultHookTimeout is AgentConfig.HookTimeout's default.
	DefaultHookTimeout = 9 * time.Minute
)

// Ranges of AgentConfig's durations.
const (
	minAgentTimeout = time.Second
	maxAgentTimeout = 24 * time.Hour
	minHookTimeout  = time.Second
	maxHookTimeout  = time.Hour
	minRuleWindow   = time.Minute
	maxRuleWindow   = 365 * 24 * time.Hour
)

// Place is where an agent's cards go.
type Place struct {
	// Channel is feishu, dingtalk, web or api.
	Channel string `mapstructure:"channel"`
	// ChatID is the chat: a Feishu chat id (oc_…), a DingTalk
	// conversation id, a web chat as <user>/<session_id> (the web user
	// whose page shows the cards, e.g. local/ops). For api: the tenant
	// (may be empty); the approvals are listed to the API users the
	// approver rule allows.
	ChatID string `mapstructure:"chat_id"`
}

// DefaultMaxPending is AgentConfig.MaxPending's default.
const DefaultMaxPending = 20

// minTokenLen is the shortest token accepted.
const minTokenLen = 16

var agentNameRE = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// webChatRE is a web chat id as the web channel names its chats:
// <user>/<session_id>.
var webChatRE = regexp.MustCompile(`^[^/]+(/[^/]+)*/[A-Za-z0-9_-]{1,64}$`)

// Validate checks every agent; errors name the key ("agents[ci].token_env:
// …"). getenv and readFile read the tokens.
func Validate(cs []AgentConfig, getenv func(string) string, readFile func(string) ([]byte, error)) error {
	var errs []error
	seen := map[string]bool{}
	tokens := map[string]string{}
	for i, c := range cs {
		id := c.Name
		if id == "" {
			id = fmt.Sprint(i)
		}
		add := func(k, format string, args ...any) {
			errs = append(errs, fmt.Errorf("agents[%s].%s: %s", id, k, fmt.Sprintf(format, args...)))
		}
		if !agentNameRE.MatchString(c.Name) {
			add("name", "%q must be 1 to 32 of a-z, 0-9, - and _", c.Name)
		} else if seen[c.Name] {
			add("name", "%q is used by another agent", c.Name)
		}
		seen[c.Name] = true
		tok, err := token(c, getenv, readFile)
		switch {
		case err != nil:
			add(tokenKey(c), "%v", err)
		case len(tok) < minTokenLen:
			add(tokenKey(c), "the token is %d characters; use at least %d (e.g. openssl rand -hex 32)", len(tok), minTokenLen)
		case tokens[tok] != "":
			add(tokenKey(c), "the same token as agent %s: each agent needs its own", tokens[tok])
		default:
			tokens[tok] = c.Name
		}
		switch c.ApproveIn.Channel {
		case "feishu", "dingtalk", "web":
			switch {
			case c.ApproveIn.ChatID == "":
				add("approve_in.chat_id", "is required for channel %s", c.ApproveIn.Channel)
			case c.ApproveIn.Channel == "web" && !webChatRE.MatchString(c.ApproveIn.ChatID):
				add("approve_in.chat_id", "%q is not a web chat: write <user>/<session_id>, the web user who watches it and a session id of 1 to 64 of A-Z, a-z, 0-9, _ and - (e.g. local/ops)", c.ApproveIn.ChatID)
			}
		case "api":
		default:
			add("approve_in.channel", "%q is not feishu, dingtalk, web or api", c.ApproveIn.Channel)
		}
		if c.MaxPending < 0 {
			add("max_pending", "must not be negative")
		}
		if c.Timeout != 0 && (c.Timeout < minAgentTimeout || c.Timeout > maxAgentTimeout) {
			add("timeout", "%v is not between %v and %v", c.Timeout, minAgentTimeout, maxAgentTimeout)
		}
		if c.HookTimeout != 0 && (c.HookTimeout < minHookTimeout || c.HookTimeout > maxHookTimeout) {
			add("hook_timeout", "%v is not between %v and %v", c.HookTimeout, minHookTimeout, maxHookTimeout)
		}
		if c.RuleWindow != 0 && (c.RuleWindow < minRuleWindow || c.RuleWindow > maxRuleWindow) {
			add("rule_window", "%v is not between %v and %v", c.RuleWindow, minRuleWindow, maxRuleWindow)
		}
		if _, err := CompileRules(c.Name, c.Policy); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func tokenKey(c AgentConfig) string {
	if c.TokenFile != "" {
		return "token_file"
	}
	return "token_env"
}

// token reads an agent's token.
func token(c AgentConfig, getenv func(string) string, readFile func(string) ([]byte, error)) (string, error) {
	switch {
	case c.TokenEnv != "" && c.TokenFile != "":
		return "", errors.New("set token_env or token_file, not both")
	case c.TokenFile != "":
		if readFile == nil {
			readFile = os.ReadFile
		}
		b, err := readFile(c.TokenFile)
		if err != nil {
			return "", fmt.Errorf("cannot read the token file: %v", err)
		}
		return strings.TrimSpace(string(b)), nil
	case c.TokenEnv != "":
		if getenv == nil {
			getenv = os.Getenv
		}
		t := getenv(c.TokenEnv)
		if t == "" {
			return "", fmt.Errorf("the environment variable %s is empty or not set", c.TokenEnv)
		}
		return t, nil
	}
	return "", errors.New("is required: the name of the environment variable holding the agent's bearer token (or token_file)")
}
