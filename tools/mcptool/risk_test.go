package mcptool

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

func boolp(b bool) *bool { return &b }

var riskCases = []struct {
	name    string
	trusted bool
	a       *mcp.ToolAnnotations
	effect  approval.Effect
	source  words.Key
}{
	{"trusted read-only", true, &mcp.ToolAnnotations{ReadOnlyHint: true}, approval.EffectRead, words.MCPRiskReadOnly},
	{"trusted read-only and destructive", true, &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: boolp(true)}, approval.EffectRead, words.MCPRiskReadOnly},
	{"trusted not destructive", true, &mcp.ToolAnnotations{DestructiveHint: boolp(false)}, approval.EffectWrite, words.MCPRiskNotDestructive},
	{"trusted destructive", true, &mcp.ToolAnnotations{DestructiveHint: boolp(true)}, approval.EffectDestructive, words.MCPRiskDestructive},
	{"trusted destructive absent", true, &mcp.ToolAnnotations{IdempotentHint: true}, approval.EffectDestructive, words.MCPRiskDestructive},
	{"trusted no annotations", true, nil, approval.EffectDestructive, words.MCPRiskDestructive},
	{"untrusted read-only", false, &mcp.ToolAnnotations{ReadOnlyHint: true}, approval.EffectDestructive, words.MCPRiskUntrusted},
	{"untrusted not destructive", false, &mcp.ToolAnnotations{DestructiveHint: boolp(false)}, approval.EffectDestructive, words.MCPRiskUntrusted},
	{"untrusted none", false, nil, approval.EffectDestructive, words.MCPRiskUntrusted},
}

func TestEffectOf(t *testing.T) {
	for _, tt := range riskCases {
		t.Run(tt.name, func(t *testing.T) {
			e, src := effectOf("fs", tt.trusted, tt.a)
			if e != tt.effect {
				t.Errorf("effect %s, want %s", e, tt.effect)
			}
			if want := approval.Say(tt.source, "fs"); src != want {
				t.Errorf("source %+v, want %+v", src, want)
			}
		})
	}
}
