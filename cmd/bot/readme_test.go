package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestChineseReadmeInStep: README.zh-CN.md keeps step with README.md: the
// two links between them, the same two commands, a troubleshooting table
// of as many rows, the same console checklists, and no `code` the English
// one does not have (a key, a variable, a route or a message), so it names
// nothing that does not exist.
func TestChineseReadmeInStep(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	en, zh := read("README.md"), read("README.zh-CN.md")
	if !strings.Contains(en, "](README.zh-CN.md)") || !strings.Contains(zh, "](README.md)") {
		t.Error("the READMEs do not link to each other")
	}

	// commands returns the lines of the first sh block after heading,
	// without their comments.
	commands := func(doc, heading string) []string {
		_, rest, ok := strings.Cut(doc, heading)
		_, rest, ok2 := strings.Cut(rest, "```sh\n")
		block, _, ok3 := strings.Cut(rest, "```")
		if !ok || !ok2 || !ok3 {
			t.Fatalf("no sh block after %q", heading)
		}
		var cmds []string
		for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
			c, _, _ := strings.Cut(l, "#")
			cmds = append(cmds, strings.TrimSpace(c))
		}
		return cmds
	}
	if e, z := commands(en, "## Two commands"), commands(zh, "## 两条命令"); strings.Join(e, "\n") != strings.Join(z, "\n") {
		t.Errorf("the two commands differ: %q and %q", e, z)
	}

	// rows counts the table rows of the section after heading.
	rows := func(doc, heading string) int {
		_, rest, ok := strings.Cut(doc, heading)
		if !ok {
			t.Fatalf("no %q", heading)
		}
		if i := strings.Index(rest, "\n## "); i >= 0 {
			rest = rest[:i]
		}
		n := 0
		for _, l := range strings.Split(rest, "\n") {
			if strings.HasPrefix(l, "| ") {
				n++
			}
		}
		return n
	}
	if e, z := rows(en, "## Troubleshooting"), rows(zh, "## 故障排查"); e != z || e < 3 {
		t.Errorf("troubleshooting: %d rows in README.md, %d in README.zh-CN.md", e, z)
	}

	// steps counts the numbered steps of the console checklist after heading.
	steps := func(doc, heading string) int {
		_, rest, ok := strings.Cut(doc, heading)
		if !ok {
			t.Fatalf("no %q", heading)
		}
		if i := strings.Index(rest, "\n\n\n"); i >= 0 {
			rest = rest[:i]
		}
		_, list, _ := strings.Cut(rest, "\n1. ")
		list, _, _ = strings.Cut(list, "\n\n")
		return 1 + len(regexp.MustCompile(`(?m)^\d+\. `).FindAllString(list, -1))
	}
	for _, h := range [][2]string{{"Console checklist (开发者后台):", "开发者后台检查清单："},
		{"Console checklist (open-dev.dingtalk.com):", "开发者后台（open-dev.dingtalk.com）检查清单："}} {
		if e, z := steps(en, h[0]), steps(zh, h[1]); e != z {
			t.Errorf("%s: %d steps in README.md, %d in README.zh-CN.md", h[0], e, z)
		}
	}

	flat := strings.Join(strings.Fields(en), " ") // README.md wraps lines inside `code`
	span := regexp.MustCompile("`([^`\n]+)`")
	for _, m := range span.FindAllStringSubmatch(zh, -1) {
		s := m[1]
		if strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) }) && !strings.Contains(en, "`"+s+"`") {
			continue // a placeholder written in Chinese (HITLBOT_<路径>, @机器人 确认)
		}
		if !strings.Contains(flat, s) {
			t.Errorf("README.zh-CN.md has `%s`, which README.md does not", s)
		}
	}
}
