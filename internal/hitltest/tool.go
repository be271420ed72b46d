package hitltest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// Tool is an agent.Tool of a given effect that counts its runs. Its
// argument is {"target": "..."}.
type Tool struct {
	name   string
	effect approval.Effect

	// Runs counts the runs.
	Runs atomic.Int64
	// About is the description (default "does NAME").
	About string
	// Result is the content of run n on target (default "NAME done (run
	// N)"; TargetResult says the target too).
	Result func(name, target string, n int64) string
	// Show is the preview of args (default "NAME ARGS").
	Show func(name string, args json.RawMessage) string
	// Fails, when set, is the result of a run that reports a failure.
	Fails string
	// Gate, when set, holds every run until it is closed (or the run's
	// context ends).
	Gate chan struct{}
	// Unknown is how many of the next runs end with an error of unknown
	// effect (counted as runs: "the connection dropped during commit"),
	// which freezes their approval.
	Unknown atomic.Int64
}

// NewTool returns a counting tool named name of effect.
func NewTool(name string, effect approval.Effect) *Tool {
	return &Tool{name: name, effect: effect}
}

// Args are the tool's arguments.
type Args struct {
	Target string `json:"target" jsonschema:"what to act on"`
}

// TargetResult is a Tool.Result naming the target: "NAME TARGET done (run N)".
func TargetResult(name, target string, n int64) string {
	return fmt.Sprintf("%s %s done (run %d)", name, target, n)
}

func (t *Tool) Name() string { return t.name }
func (t *Tool) Description() string {
	if t.About != "" {
		return t.About
	}
	return "does " + t.name
}

// Schema is the schema of Args.
func (t *Tool) Schema() *jsonschema.Schema {
	s, err := jsonschema.For[Args](nil)
	if err != nil {
		panic(err)
	}
	return s
}

func (t *Tool) Effect(json.RawMessage) approval.Effect { return t.effect }

func (t *Tool) Preview(_ context.Context, args json.RawMessage) (string, error) {
	if t.Show != nil {
		return t.Show(t.name, args), nil
	}
	return t.name + " " + string(args), nil
}

func (t *Tool) Run(ctx context.Context, args json.RawMessage) (agent.Output, error) {
	if t.Gate != nil {
		select {
		case <-t.Gate:
		case <-ctx.Done():
			return agent.Output{}, ctx.Err()
		}
	}
	n := t.Runs.Add(1)
	for u := t.Unknown.Load(); u > 0; u = t.Unknown.Load() {
		if t.Unknown.CompareAndSwap(u, u-1) {
			return agent.Output{}, fmt.Errorf("%s: the connection dropped during commit (run %d)", t.name, n)
		}
	}
	if t.Fails != "" {
		return agent.Output{Content: t.Fails, IsError: true}, nil
	}
	if t.Result != nil {
		var a Args
		_ = json.Unmarshal(args, &a)
		return agent.Output{Content: t.Result(t.name, a.Target, n)}, nil
	}
	return agent.Output{Content: fmt.Sprintf("%s done (run %d)", t.name, n)}, nil
}
