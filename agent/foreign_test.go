package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// foreignTool is a hitltest.Tool that another program defines: its
// definition is a digest fixed per object, as an MCP tool's is (a changed
// definition is a new object in the registry).
type foreignTool struct {
	*hitltest.Tool
	def string
}

func (t *foreignTool) Definition() string { return t.def }
func (t *foreignTool) EffectSource() approval.Words {
	return approval.Say(words.MCPRiskUntrusted, "fs")
}

var _ agent.Foreign = (*foreignTool)(nil)

// wrapped hides a tool behind a wrapper, as the metrics do.
type wrapped struct{ agent.Tool }

func (w wrapped) Unwrap() agent.Tool { return w.Tool }

func TestAsForeignLooksThroughWrappers(t *testing.T) {
	f := &foreignTool{hitltest.NewTool("fs__write", approval.EffectDestructive), "d1"}
	if _, ok := agent.AsForeign(wrapped{wrapped{f}}); !ok {
		t.Fatal("a wrapped foreign tool is not seen as foreign")
	}
	if _, ok := agent.AsForeign(wrapped{hitltest.NewTool("note", approval.EffectWrite)}); ok {
		t.Fatal("a built-in tool is seen as foreign")
	}
	args := []byte(`{"target":"a.txt"}`)
	_, h1, _ := agent.HashCall(f, "fs__write", args)
	_, h2, _ := agent.HashCall(&foreignTool{f.Tool, "d2"}, "fs__write", args)
	_, plain, _ := agent.HashCall(f.Tool, "fs__write", args)
	if h1 == h2 || h1 == plain {
		t.Fatalf("hashes under two definitions and plain: %s %s %s", h1, h2, plain)
	}
}

// registryGroupTests: what SetGroup and Replace leave in the registry.
var registryGroupTests = []struct {
	name    string
	do      func(r *agent.Registry) error
	want    []string
	wantErr string
}{
	{"a group beside the built-ins", func(r *agent.Registry) error {
		return r.SetGroup("fs", hitltest.NewTool("fs__read", approval.EffectRead))
	}, []string{"fs__read", "look"}, ""},
	{"a group replaced whole", func(r *agent.Registry) error {
		if err := r.SetGroup("fs", hitltest.NewTool("fs__read", approval.EffectRead), hitltest.NewTool("fs__write", approval.EffectWrite)); err != nil {
			return err
		}
		return r.SetGroup("fs", hitltest.NewTool("fs__write", approval.EffectWrite))
	}, []string{"fs__write", "look"}, ""},
	{"a group emptied", func(r *agent.Registry) error {
		if err := r.SetGroup("fs", hitltest.NewTool("fs__read", approval.EffectRead)); err != nil {
			return err
		}
		return r.SetGroup("fs")
	}, []string{"look"}, ""},
	{"a reload keeps the other groups", func(r *agent.Registry) error {
		if err := r.SetGroup("fs", hitltest.NewTool("fs__read", approval.EffectRead)); err != nil {
			return err
		}
		return r.Replace(hitltest.NewTool("note", approval.EffectWrite))
	}, []string{"fs__read", "note"}, ""},
	{"a name of another group", func(r *agent.Registry) error {
		return r.SetGroup("fs", hitltest.NewTool("look", approval.EffectRead))
	}, []string{"look"}, `tool "look" registered twice`},
	{"a name twice in one group", func(r *agent.Registry) error {
		return r.SetGroup("fs", hitltest.NewTool("fs__a", approval.EffectRead), hitltest.NewTool("fs__a", approval.EffectRead))
	}, []string{"look"}, `tool "fs__a" registered twice`},
	{"Offer leaves out only the names another group holds", func(r *agent.Registry) error {
		if _, err := r.Offer("a", hitltest.NewTool("a__b__c", approval.EffectRead)); err != nil {
			return err
		}
		taken, err := r.Offer("a__b", hitltest.NewTool("look", approval.EffectRead), hitltest.NewTool("a__b__c", approval.EffectRead),
			hitltest.NewTool("a__b__d", approval.EffectRead))
		if err == nil && strings.Join(taken, ",") != "a__b__c,look" {
			err = fmt.Errorf("taken %v", taken)
		}
		return err
	}, []string{"a__b__c", "a__b__d", "look"}, ""},
	{"Offer replaces the group whole", func(r *agent.Registry) error {
		if _, err := r.Offer("fs", hitltest.NewTool("fs__a", approval.EffectRead)); err != nil {
			return err
		}
		_, err := r.Offer("fs", hitltest.NewTool("fs__b", approval.EffectRead))
		return err
	}, []string{"fs__b", "look"}, ""},
	{"Offer of a name twice changes nothing", func(r *agent.Registry) error {
		_, err := r.Offer("fs", hitltest.NewTool("fs__a", approval.EffectRead), hitltest.NewTool("fs__a", approval.EffectRead))
		return err
	}, []string{"look"}, `tool "fs__a" registered twice`},
}

func TestRegistryGroups(t *testing.T) {
	for _, tt := range registryGroupTests {
		t.Run(tt.name, func(t *testing.T) {
			r := agent.NewRegistry()
			if err := r.Register(hitltest.NewTool("look", approval.EffectRead)); err != nil {
				t.Fatal(err)
			}
			err := tt.do(r)
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			var got []string
			for _, tool := range r.Tools() {
				got = append(got, tool.Name())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("tools = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDispatchRefusesAChangedForeignTool(t *testing.T) {
	r := agent.NewRegistry()
	f := &foreignTool{hitltest.NewTool("fs__write", approval.EffectDestructive), "d1"}
	if err := r.SetGroup("fs", f); err != nil {
		t.Fatal(err)
	}
	args, hash, err := agent.HashCall(f, "fs__write", []byte(`{"target":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	call := approval.Call{Tool: "fs__write", Args: args, PayloadSHA256: hash}
	for _, c := range []approval.Call{{Tool: call.Tool, Args: args}, {Tool: call.Tool, Args: args, PayloadSHA256: strings.Repeat("0", 64)}} {
		if _, err := r.Dispatch(context.Background(), c); !errors.Is(err, approval.ErrToolChanged) || !errors.Is(err, approval.ErrNotRun) {
			t.Fatalf("a call without its pinned hash: err = %v", err)
		}
	}
	changed := &foreignTool{hitltest.NewTool("fs__write", approval.EffectDestructive), "d2"}
	if err := r.SetGroup("fs", changed); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Dispatch(context.Background(), call); !errors.Is(err, approval.ErrToolChanged) || !errors.Is(err, approval.ErrNotRun) {
		t.Fatalf("err = %v, want the tool changed (not run)", err)
	}
	if f.Runs.Load()+changed.Runs.Load() != 0 {
		t.Fatal("a call pinned to another definition ran")
	}
	if err := r.SetGroup("fs", &foreignTool{changed.Tool, "d1"}); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Dispatch(context.Background(), call); err != nil || res.Status != approval.StatusExecuted {
		t.Fatalf("the definition it was approved under: %+v, %v", res, err)
	}
}

// TestForeignToolChangedBetweenCardAndClick: the tool's server changes the
// tool while its card waits; the click approves what was shown, so nothing
// runs, every card says why, and the audit trail has it as tampered.
func TestForeignToolChangedBetweenCardAndClick(t *testing.T) {
	f := &foreignTool{hitltest.NewTool("fs__write", approval.EffectDestructive), "d1"}
	h := newHarness(t, callThenSummarise(call("c1", "fs__write", "a.txt")))
	if err := h.reg.SetGroup("fs", f); err != nil {
		t.Fatal(err)
	}
	ch := h.submit(t, "s1", "write a.txt")
	a := h.nextApproval(t)
	if !strings.Contains(a.Reason, "untrusted server fs") {
		t.Fatalf("the reason does not say where the risk came from: %q", a.Reason)
	}
	want, _ := json.Marshal(map[string]string{"target": "a.txt"})
	if a.PayloadSHA256 != approval.PinnedHash("fs__write", want, "d1") {
		t.Fatalf("the approval's hash does not pin the definition: %s", a.PayloadSHA256)
	}
	changed := &foreignTool{hitltest.NewTool("fs__write", approval.EffectDestructive), "d2"}
	if err := h.reg.SetGroup("fs", changed); err != nil {
		t.Fatal(err)
	}
	o := h.decide(t, a, approval.Approve)
	if o.Status != approval.StatusFailed || !strings.Contains(o.Content, "changed on its server") {
		t.Fatalf("outcome = %+v", o)
	}
	r := result(t, ch)
	if f.Runs.Load()+changed.Runs.Load() != 0 {
		t.Fatal("the changed tool ran")
	}
	if len(r.Actions) != 1 || r.Actions[0].Status != approval.StatusFailed || !strings.Contains(r.Actions[0].Result, "changed on its server") {
		t.Fatalf("actions = %+v", r.Actions)
	}
}
