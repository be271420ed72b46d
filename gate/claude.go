package gate

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// HookPath is where Claude Code's PermissionRequest hook posts (an http
// hook in .claude/settings.json, with the agent's bearer token).
const HookPath = "/hooks/claude"

// hookEvent is the one hook event /hooks/claude answers.
const hookEvent = "PermissionRequest"

// HookInput is the part of Claude Code's PermissionRequest hook input that
// hitlbot reads (2.1.328 sends session_id, transcript_path, cwd,
// prompt_id, permission_mode, effort, hook_event_name, tool_name,
// tool_input, permission_suggestions; others are ignored). It carries no
// tool_use_id: nothing in it names one call.
type HookInput struct {
	// SessionID is Claude Code's session.
	SessionID string `json:"session_id"`
	// Cwd is the session's working directory.
	Cwd string `json:"cwd"`
	// PermissionMode is the session's mode (default, plan, acceptEdits …).
	PermissionMode string `json:"permission_mode"`
	// HookEventName must be PermissionRequest.
	HookEventName string `json:"hook_event_name"`
	// ToolName is the tool Claude Code wants to run ("Bash").
	ToolName string `json:"tool_name"`
	// ToolInput is its input, a JSON object.
	ToolInput json.RawMessage `json:"tool_input"`
	// PermissionSuggestions are the rules Claude Code's own dialog would
	// offer ("always allow …").
	PermissionSuggestions json.RawMessage `json:"permission_suggestions"`
}

// ParseHookInput reads a PermissionRequest hook's body: one JSON object
// with hook_event_name PermissionRequest, a tool_name and a tool_input
// object. Anything else is an error wrapping ErrInvalid, saying what is
// wrong.
func ParseHookInput(body []byte) (HookInput, error) {
	var in HookInput
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		return HookInput{}, fmt.Errorf("%w: the body is not a PermissionRequest hook's input (a JSON object): %v", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return HookInput{}, fmt.Errorf("%w: the body has more after its JSON object", ErrInvalid)
	}
	if in.HookEventName != hookEvent {
		return HookInput{}, fmt.Errorf("%w: hook_event_name must be %s (configure this URL under hooks.%s)", ErrInvalid, hookEvent, hookEvent)
	}
	if strings.TrimSpace(in.ToolName) == "" {
		return HookInput{}, fmt.Errorf("%w: tool_name is required", ErrInvalid)
	}
	if t := bytes.TrimSpace(in.ToolInput); len(t) == 0 || t[0] != '{' {
		return HookInput{}, fmt.Errorf("%w: tool_input must be a JSON object", ErrInvalid)
	}
	if len(in.SessionID) > 200 || len(in.Cwd) > 4096 {
		return HookInput{}, fmt.Errorf("%w: session_id or cwd is too long", ErrInvalid)
	}
	return in, nil
}

// HookDecision is the decision of a PermissionRequest hook's answer.
type HookDecision struct {
	// Behavior is allow or deny.
	Behavior string `json:"behavior"`
	// UpdatedInput is the input allowed (the one shown on the card), for
	// allow.
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	// Message says why, for deny; Claude Code gives it to the model.
	Message string `json:"message,omitempty"`
	// UpdatedPermissions, for an allow whose approver chose the card's
	// standing rule (always), holds the suggestion it came from (one
	// permission update of Claude Code's, e.g. addRules): Claude Code
	// records it in its settings and stops asking.
	UpdatedPermissions []json.RawMessage `json:"updatedPermissions,omitempty"`
}

// HookOutput is a PermissionRequest hook's answer.
type HookOutput struct {
	HookSpecificOutput struct {
		HookEventName string       `json:"hookEventName"`
		Decision      HookDecision `json:"decision"`
	} `json:"hookSpecificOutput"`
}

func hookOutput(d HookDecision) HookOutput {
	var o HookOutput
	o.HookSpecificOutput.HookEventName = hookEvent
	o.HookSpecificOutput.Decision = d
	return o
}

// serveHook answers a PermissionRequest hook of client (Claude Code's,
// Codex's) for agent ag: the
// call is asked as request_approval asks it (policy, approvers' chat,
// card, claim, audit), in a lane of its own (Ask.Lane), so that Claude
// Code's parallel requests each get their own card; it waits for the
// decision up to the agent's hook_timeout and answers allow (with the
// input shown) or deny with a sentence. The wait never outlasts
// hook_timeout: then the approval is withdrawn (Engine.Cancel, words
// GateHookGaveUp: every card says the agent stopped waiting and was told
// no, and a late click is answered so, running nothing) and the hook
// answers deny; asked again, the call is a new approval. A decision that
// wins the race with the withdrawal answers the hook instead.
func (g *Gate) serveHook(w http.ResponseWriter, r *http.Request, ag *Agent, client hookClient) {
	body, ok := readJSONBody(w, r)
	if !ok {
		return
	}
	in, err := ParseHookInput(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	q := Ask{Tool: in.ToolName, Input: in.ToolInput, Lane: g.lane(ag, in), Session: in.SessionID, Dir: in.Cwd, Program: client.String()}
	if rules, sugg, ok := offer(in.PermissionSuggestions); ok {
		q.Rules, q.Suggestion = rules, sugg
	}
	ans, _, err := g.ask(r.Context(), ag, q)
	if err != nil {
		g.writeFailure(w, err)
		return
	}
	if ans.Status == StatusPending {
		wait := ag.hookTimeout()
		ans, err = g.Wait(r.Context(), ag, ans.ID, wait)
		if err != nil {
			if r.Context().Err() != nil {
				return // Claude Code gave up on the hook: nobody reads an answer
			}
			g.writeFailure(w, err)
			return
		}
		if ans.Status == StatusPending {
			ans, err = g.giveUp(context.WithoutCancel(r.Context()), ag, ans, wait, in.ToolName == approval.QuestionTool)
			if err != nil {
				g.writeFailure(w, err)
				return
			}
		}
	}
	canon, _, _ := approval.HashCall(in.ToolName, in.ToolInput) // ask canonicalized it
	writeJSON(w, http.StatusOK, hookOutput(client.decision(ans, canon)))
}

// giveUp ends a hook request's approval that nobody decided within wait:
// the agent is told no, so the approval must not stay decidable (an
// approve would say the agent may run a call it was told not to run). It
// is withdrawn with the reason GateHookGaveUp, its cards settled. A
// decision taken in that very moment wins: its answer is the hook's.
func (g *Gate) giveUp(ctx context.Context, ag *Agent, ans Answer, wait time.Duration, question bool) (Answer, error) {
	reason := words.In(g.deps.Lang, words.GateHookGaveUp, words.Span(words.Of(g.deps.Lang), wait))
	o, err := g.deps.Engine.Cancel(ctx, ans.ID, "", approval.SourceSystem, reason)
	if err != nil {
		return Answer{}, err
	}
	if o.Status == approval.StatusAlreadyDecided {
		// Decided as the hook gave up: a decision's tool (the allow) is
		// quick; its outcome answers the hook.
		if decided, err := g.Wait(ctx, ag, ans.ID, decidedWait); err == nil && decided.Status != StatusPending {
			return decided, nil
		}
	}
	ans.Status = StatusDenied
	if question {
		ans.Message = questionTimedOut(wait, ans)
		return ans, nil
	}
	ans.Message = fmt.Sprintf("nobody decided within %s; approval %s was withdrawn and its cards say so. Do not run it; "+
		"ask again if it is still needed (a new approval).", wait, ans.ID)
	return ans, nil
}

// decidedWait bounds the wait for the outcome of a decision that came as
// a hook gave up.
const decidedWait = 10 * time.Second

// lane is the lane of a hook request: derived, under the agent's token,
// from the Claude Code session, the tool and the input's canonical hash,
// so the same call asked again in the same session finds the approval
// still pending for it, and two different calls never share one. Without
// a session id every request gets a lane of its own.
func (g *Gate) lane(ag *Agent, in HookInput) string {
	_, hash, err := approval.HashCall(in.ToolName, in.ToolInput)
	if in.SessionID == "" || err != nil {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
		return hex.EncodeToString(b[:])
	}
	m := hmac.New(sha256.New, ag.token)
	m.Write([]byte("hitlbot hook lane\x00" + in.SessionID + "\x00" + in.ToolName + "\x00" + hash))
	return hex.EncodeToString(m.Sum(nil)[:16])
}
