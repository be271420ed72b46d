package main

import (
	"os/exec"
	"strings"
	"testing"
)

// maxDeps bounds what `go list -deps ./cmd/bot` counts (the standard
// library's packages included): every package is compiled on a cold build
// and is code hitlbot ships. 614 before third_party/ trimmed the Lark SDK
// (third_party/README.md); 480 after (the channels' random ids are the
// standard library's crypto/rand.Text, not a package of their own). 471
// once nine packages that one small use each brought went (the testing
// package through mcptest, net/http/httptest through bot bench, two
// unused imports of larkws, prometheus/collectors), which made room for
// tracing (internal/tracing: the OpenTelemetry trace API, not its SDK).
const maxDeps = 480

func TestDependencyCount(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) > maxDeps {
		var lark []string
		for _, d := range deps {
			if strings.Contains(d, "larksuite") {
				lark = append(lark, d)
			}
		}
		t.Errorf("cmd/bot builds %d packages, more than %d: a new dependency, or one that brings more than it is used for (the Lark SDK's packages now: %d %v)",
			len(deps), maxDeps, len(lark), lark)
	}
}
