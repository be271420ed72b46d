package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// mdBlock is a fenced code block of a Markdown file: its info string,
// its text (the lines between the fences, as written) and the ## heading
// of the section it is in.
type mdBlock struct{ lang, text, section string }

// mdParse returns the headings (the lines starting with #) and the fenced
// code blocks of a Markdown file, in order; a fence may be indented (a
// block in a list item).
func mdParse(doc string) (headings []string, blocks []mdBlock) {
	section := ""
	var cur *mdBlock
	var lines []string
	for _, l := range strings.Split(doc, "\n") {
		fence := strings.HasPrefix(strings.TrimLeft(l, " "), "```")
		switch {
		case cur != nil && fence:
			cur.text = strings.Join(lines, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur, lines = nil, nil
		case cur != nil:
			lines = append(lines, l)
		case fence:
			cur = &mdBlock{lang: strings.TrimPrefix(strings.TrimLeft(l, " "), "```"), section: section}
		case strings.HasPrefix(l, "#"):
			headings = append(headings, l)
			if h, ok := strings.CutPrefix(l, "## "); ok {
				section = h
			}
		}
	}
	return headings, blocks
}

func mdBlocks(doc string) []mdBlock {
	_, b := mdParse(doc)
	return b
}

// readDoc reads a file of the repository.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// translations are the pages kept in English and Chinese.
var translations = [][2]string{
	{"README.md", "README.zh-CN.md"},
	{"docs/feishu.md", "docs/feishu.zh-CN.md"},
	{"docs/dingtalk.md", "docs/dingtalk.zh-CN.md"},
	{"docs/troubleshooting.md", "docs/troubleshooting.zh-CN.md"},
}

// TestChineseReadmeInStep: each Chinese page keeps step with its English
// one: they link to each other; the same headings, one for each and in
// order (the same levels); byte for byte the same code blocks, in the same
// order; and no `code` the English one does not have (a key, a variable, a
// route or a message), so it names nothing that does not exist. Then what
// the pages hold in particular: the README's two commands, a
// troubleshooting table of as many rows, the same console checklists.
func TestChineseReadmeInStep(t *testing.T) {
	for _, tr := range translations {
		en, zh := readDoc(t, tr[0]), readDoc(t, tr[1])
		if !strings.Contains(en, "]("+filepath.Base(tr[1])+")") || !strings.Contains(zh, "]("+filepath.Base(tr[0])+")") {
			t.Errorf("%s and %s do not link to each other", tr[0], tr[1])
		}
		eh, eb := mdParse(en)
		zh2, zb := mdParse(zh)
		level := func(h []string) []int {
			var n []int
			for _, l := range h {
				n = append(n, len(l)-len(strings.TrimLeft(l, "#")))
			}
			return n
		}
		if !slices.Equal(level(eh), level(zh2)) {
			t.Errorf("%s has the headings\n%s\n%s has\n%s", tr[0], strings.Join(eh, "\n"), tr[1], strings.Join(zh2, "\n"))
		}
		if len(eb) != len(zb) {
			t.Errorf("%d code blocks in %s, %d in %s", len(eb), tr[0], len(zb), tr[1])
		}
		for i := 0; i < len(eb) && i < len(zb); i++ {
			if eb[i].lang != zb[i].lang || eb[i].text != zb[i].text {
				t.Errorf("code block %d of %s (section %q) differs in %s:\n%s\n---\n%s", i+1, tr[0], eb[i].section, tr[1], eb[i].text, zb[i].text)
			}
		}
		flat := strings.Join(strings.Fields(en), " ") // the English wraps lines inside `code`
		span := regexp.MustCompile("`([^`\n]+)`")
		for _, m := range span.FindAllStringSubmatch(zh, -1) {
			s := m[1]
			if strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) }) && !strings.Contains(en, "`"+s+"`") {
				continue // a placeholder written in Chinese (HITLBOT_<路径>, @机器人 确认)
			}
			if !strings.Contains(flat, s) {
				t.Errorf("%s has `%s`, which %s does not", tr[1], s, tr[0])
			}
		}
	}

	en, zh := readDoc(t, "README.md"), readDoc(t, "README.zh-CN.md")
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

	// rows counts the table rows of a page.
	rows := func(doc string) int {
		n := 0
		for _, l := range strings.Split(doc, "\n") {
			if strings.HasPrefix(l, "| ") {
				n++
			}
		}
		return n
	}
	if e, z := rows(readDoc(t, "docs/troubleshooting.md")), rows(readDoc(t, "docs/troubleshooting.zh-CN.md")); e != z || e < 3 {
		t.Errorf("troubleshooting: %d rows in docs/troubleshooting.md, %d in docs/troubleshooting.zh-CN.md", e, z)
	}

	// steps counts the numbered steps of the console checklist after heading.
	steps := func(doc, heading string) int {
		_, rest, ok := strings.Cut(doc, heading)
		if !ok {
			t.Fatalf("no %q", heading)
		}
		_, list, _ := strings.Cut(rest, "\n1. ")
		list, _, _ = strings.Cut(list, "\n\n")
		return 1 + len(regexp.MustCompile(`(?m)^\d+\. `).FindAllString(list, -1))
	}
	for _, h := range [][4]string{
		{"docs/feishu.md", "Console checklist (开发者后台):", "docs/feishu.zh-CN.md", "开发者后台检查清单："},
		{"docs/dingtalk.md", "Console checklist (open-dev.dingtalk.com):", "docs/dingtalk.zh-CN.md", "开发者后台（open-dev.dingtalk.com）检查清单："}} {
		if e, z := steps(readDoc(t, h[0]), h[1]), steps(readDoc(t, h[2]), h[3]); e != z || e < 3 {
			t.Errorf("%s: %d steps in %s, %d in %s", h[1], e, h[0], z, h[2])
		}
	}
}

// TestReadmeSize: the README is read in ten minutes: at most 20 KB.
func TestReadmeSize(t *testing.T) {
	if n := len(readDoc(t, "README.md")); n > 20*1024 {
		t.Errorf("README.md is %d bytes, more than 20 KB: move the detail to a page under docs/", n)
	}
}

// TestDocsLinks: every relative link of README.md and of the pages under
// docs/ names a file that exists (an anchor is not checked).
func TestDocsLinks(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md", "../../README.zh-CN.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", strings.TrimPrefix(p, "../../"), m[1])
			}
		}
	}
}
