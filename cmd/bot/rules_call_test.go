package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With the rules model, /tools shows each tool's risk under the policy in
// force (a reload counts) and /call reaches a tool through the policy.
func TestRulesCallAndToolsServe(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bot.yaml")
	write := func(text string) { t.Helper(); replaceFile(t, file, text) }
	write("approval:\n  policy:\n    enabled: true\n")
	s := serve(t, "-config", file, "-data", filepath.Join(dir, "data"))

	text := func(res map[string]any) string { return fmt.Sprint(res["text"]) }
	tools := text(chat(t, s.base, map[string]any{"message": "/tools"}))
	for _, want := range []string{"• task_create — MEDIUM risk: asks the first time", "• task_delete — HIGH risk (destructive)", "• task_list — LOW risk (a read)"} {
		if !strings.Contains(tools, want) {
			t.Errorf("/tools lacks %q:\n%s", want, tools)
		}
	}
	token(t, chat(t, s.base, map[string]any{"message": `/call task_create {"title":"buy milk"}`})) // MEDIUM: asks

	write("approval:\n  policy:\n    enabled: true\n    tools:\n      task_create:\n        risk: LOW\n")
	waitFor(t, 20*time.Second, "the reload", func() bool { return strings.Contains(s.stderr.String(), "approval policy reloaded") })
	if tools := text(chat(t, s.base, map[string]any{"message": "/tools"})); !strings.Contains(tools, "• task_create — LOW risk —") {
		t.Errorf("after the reload /tools says:\n%s", tools)
	}
	res := chat(t, s.base, map[string]any{"message": `/call task_create {"title":"buy bread"}`})
	if res["requiresConfirmation"] == true || !strings.Contains(text(res), "buy bread") {
		t.Errorf("after the reload the LOW call still asks or did not run: %v", res)
	}
}
