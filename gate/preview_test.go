package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// lines returns n lines "line 1\n" … "line n\n", as a JSON string's body.
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `line %d\n`, i)
	}
	return b.String()
}

// shown returns the preview lines "line 1" … "line n".
func shown(prefix string, n int) string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprintf("%sline %d", prefix, i+1)
	}
	return strings.Join(l, "\n")
}

// previewTests: per kind of tool, the summary and preview of a call.
var previewTests = []struct {
	name, tool, input, lang string
	summary, preview        string
}{
	// Bash
	{"bash", "Bash", `{"command":"rm -rf build"}`, "en",
		"Bash: rm -rf build", "rm -rf build"},
	{"bash with a description and other fields", "Bash",
		`{"command":"make clean\nmake all","description":"Rebuild","timeout":60000,"run_in_background":true}`, "en",
		"Bash: make clean …", "make clean\nmake all\n(description: Rebuild)\n" + `{"run_in_background":true,"timeout":60000}`},
	{"bash description in Chinese", "Bash", `{"command":"ls","description":"列出"}`, "zh",
		"Bash: ls", "ls\n（说明：列出）"},
	{"bash: the first line that is not blank", "Bash", `{"command":"\n\n  cd /tmp\nls"}`, "en",
		"Bash: cd /tmp …", "\n\n  cd /tmp\nls"},
	{"bash: a bearer token", "Bash", `{"command":"curl -H 'Authorization: Bearer sk-abc123' https://api.example.com"}`, "en",
		"Bash: curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com",
		"curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com"},
	{"bash: a token's shape", "Bash", `{"command":"export OPENAI=sk-abcdefghijklmnopqrstuvwxyz"}`, "en",
		"Bash: export OPENAI=[REDACTED]", "export OPENAI=[REDACTED]"},
	{"bash: a secret-looking field", "Bash", `{"command":"ls","password":"hunter2"}`, "en",
		"Bash: ls", `ls` + "\n" + `{"password":"[REDACTED]"}`},
	{"bash: invisible characters", "Bash", `{"command":"echo \u202eftc.dwssap/ \u200b\u001b[31mred\u0007\tx\r"}`, "en",
		"Bash: echo ftc.dwssap/ [31mred x", "echo ftc.dwssap/ [31mred    x"},
	{"bash: a command that is not a string", "Bash", `{"command":["rm","-rf","/"]}`, "en",
		"Bash", "{\n  \"command\": [\n    \"rm\",\n    \"-rf\",\n    \"/\"\n  ]\n}"},

	// Write
	{"write", "Write", `{"file_path":"/srv/app/main.go","content":"` + lines(12) + `"}`, "en",
		"Write /srv/app/main.go (12 lines)", "/srv/app/main.go\n" + shown("", 12)},
	{"write: more than 20 lines", "Write", `{"file_path":"/a","content":"` + lines(25) + `"}`, "en",
		"Write /a (25 lines)", "/a\n" + shown("", 20) + "\n… 5 more lines"},
	{"write: one more line", "Write", `{"file_path":"/a","content":"` + lines(21) + `"}`, "en",
		"Write /a (21 lines)", "/a\n" + shown("", 20) + "\n… 1 more line"},
	{"write: one line without a line break", "Write", `{"file_path":"/a","content":"x"}`, "en",
		"Write /a (1 line)", "/a\nx"},
	{"write: empty", "Write", `{"file_path":"/a","content":""}`, "en",
		"Write /a (0 lines)", "/a"},
	{"write: blank lines count", "Write", `{"file_path":"/a","content":"a\n\n\nb"}`, "zh",
		"Write /a (4 行)", "/a\na\n\n\nb"},
	{"write: more lines in Chinese", "Write", `{"file_path":"/a","content":"` + lines(23) + `"}`, "zh",
		"Write /a (23 行)", "/a\n" + shown("", 20) + "\n… 还有 3 行"},
	{"write: a private key", "Write",
		`{"file_path":"/k.pem","content":"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAAB3NzaC1yc2E\n-----END OPENSSH PRIVATE KEY-----\nafter\n"}`, "en",
		"Write /k.pem (5 lines)", "/k.pem\n-----BEGIN OPENSSH PRIVATE KEY-----\n[REDACTED]\n[REDACTED]\n-----END OPENSSH PRIVATE KEY-----\nafter"},
	{"write: secrets in a file", "Write", `{"file_path":"/app/.env","content":"DB_PASSWORD=hunter2\nPORT=8080\n"}`, "en",
		"Write /app/.env (2 lines)", "/app/.env\nDB_PASSWORD=[REDACTED]\nPORT=8080"},
	{"write: tabs and a CR LF", "Write", `{"file_path":"/a","content":"if x {\r\n\treturn\r\n}\r\n"}`, "en",
		"Write /a (3 lines)", "/a\nif x {\n    return\n}"},
	{"write: no content", "Write", `{"file_path":"/a"}`, "en",
		"Write: /a", "{\n  \"file_path\": \"/a\"\n}"},

	// Edit, MultiEdit
	{"edit", "Edit", `{"file_path":"/a.go","old_string":"x := 1\ny := 2","new_string":"x := 3"}`, "en",
		"Edit /a.go", "/a.go\n- x := 1\n- y := 2\n+ x := 3"},
	{"edit: every occurrence", "Edit", `{"file_path":"/a.go","old_string":"foo","new_string":"bar","replace_all":true}`, "en",
		"Edit /a.go", "/a.go\n(replaces every occurrence)\n- foo\n+ bar"},
	{"edit: an insertion", "Edit", `{"file_path":"/a.go","old_string":"","new_string":"new\n"}`, "en",
		"Edit /a.go", "/a.go\n+ new"},
	{"edit: at most 40 lines", "Edit", `{"file_path":"/a","old_string":"` + lines(30) + `","new_string":"` + lines(30) + `"}`, "en",
		"Edit /a", "/a\n" + shown("- ", 30) + "\n" + shown("+ ", 10) + "\n… 20 more lines"},
	{"edit: an unknown field", "Edit", `{"file_path":"/a","old_string":"a","new_string":"b","api_token":"t0ps3cret"}`, "en",
		"Edit /a", "/a\n- a\n+ b\n" + `{"api_token":"[REDACTED]"}`},
	{"edit: replace_all not a boolean", "Edit", `{"file_path":"/a","old_string":"a","new_string":"b","replace_all":"yes"}`, "en",
		"Edit: /a", "{\n  \"file_path\": \"/a\",\n  \"new_string\": \"b\",\n  \"old_string\": \"a\",\n  \"replace_all\": \"yes\"\n}"},
	{"multiedit", "MultiEdit",
		`{"file_path":"/a.go","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c\nd","new_string":"e","replace_all":true}]}`, "en",
		"MultiEdit /a.go", "/a.go\n- a\n+ b\n\n(replaces every occurrence)\n- c\n- d\n+ e"},
	{"multiedit: at most 40 lines in all", "MultiEdit",
		`{"file_path":"/a","edits":[{"old_string":"` + lines(25) + `","new_string":"x"},{"old_string":"` + lines(25) + `","new_string":"y"}]}`, "en",
		"MultiEdit /a", "/a\n" + shown("- ", 25) + "\n+ x\n\n" + shown("- ", 13) + "\n… 13 more lines"},
	{"multiedit: an edit that is not an object", "MultiEdit", `{"file_path":"/a","edits":["x"]}`, "en",
		"MultiEdit: /a", "{\n  \"edits\": [\n    \"x\"\n  ],\n  \"file_path\": \"/a\"\n}"},

	// Tools with a primary argument
	{"read", "Read", `{"file_path":"/etc/hosts","limit":20}`, "en",
		"Read: /etc/hosts", "{\n  \"file_path\": \"/etc/hosts\",\n  \"limit\": 20\n}"},
	{"webfetch: a URL's password", "WebFetch", `{"url":"https://bob:s3cr3t@example.com/x","prompt":"summarise"}`, "en",
		"WebFetch: https://bob:[REDACTED]@example.com/x",
		"{\n  \"prompt\": \"summarise\",\n  \"url\": \"https://bob:[REDACTED]@example.com/x\"\n}"},
	{"grep", "Grep", `{"pattern":"TODO\\(","path":"src"}`, "en",
		"Grep: src", "{\n  \"path\": \"src\",\n  \"pattern\": \"TODO\\\\(\"\n}"},
	{"an MCP tool with a query", "mcp__db__search", `{"query":"SELECT 1","limit":1.50}`, "en",
		"mcp__db__search: SELECT 1", "{\n  \"limit\": 1.50,\n  \"query\": \"SELECT 1\"\n}"},

	// Anything else
	{"no primary argument", "TodoWrite", `{"todos":[{"content":"x","status":"pending"}]}`, "en",
		"TodoWrite", "{\n  \"todos\": [\n    {\n      \"content\": \"x\",\n      \"status\": \"pending\"\n    }\n  ]\n}"},
	{"secret keys at any depth", "Deploy", `{"env":{"GITHUB_TOKEN":"ghp_x","region":"eu"},"note":"<b>&</b>"}`, "en",
		"Deploy", "{\n  \"env\": {\n    \"GITHUB_TOKEN\": \"[REDACTED]\",\n    \"region\": \"eu\"\n  },\n  \"note\": \"<b>&</b>\"\n}"},
	{"invisible characters in JSON", "X", `{"a":"r\u202em\u007f\u0085 x"}`, "en",
		"X", "{\n  \"a\": \"rm x\"\n}"},
	{"an array", "X", `[1,"two"]`, "en", "X", "[\n  1,\n  \"two\"\n]"},
	{"a string", "X", `"rm -rf /"`, "en", "X", `"rm -rf /"`},
	{"null", "X", `null`, "en", "X", "null"},
	{"empty", "X", ``, "en", "X", "(no input)"},
	{"blank", "X", " \n ", "zh", "X", "（无输入）"},
	{"not JSON", "Bash", `{"command":"rm`, "en", "Bash", "(the input is not valid JSON, so it is not shown)"},
	{"data after the JSON", "Bash", `{"command":"ls"} {"command":"rm -rf /"}`, "en", "Bash", "(the input is not valid JSON, so it is not shown)"},
	{"not JSON in Chinese", "X", `nope`, "zh", "X", "（输入不是有效的 JSON，因此不显示）"},
	{"a tool name with control characters", "Ba\x1bsh\n", `{"command":"ls"}`, "en", "Bash: ls",
		"{\n  \"command\": \"ls\"\n}"},
}

func TestPreview(t *testing.T) {
	for _, tt := range previewTests {
		t.Run(tt.name, func(t *testing.T) {
			summary, preview := Preview(tt.tool, json.RawMessage(tt.input), tt.lang)
			if summary != tt.summary {
				t.Errorf("summary\n got %q\nwant %q", summary, tt.summary)
			}
			if preview != tt.preview {
				t.Errorf("preview\n got %q\nwant %q", preview, tt.preview)
			}
		})
	}
}

// TestPreviewCuts: long inputs are cut at rune boundaries, at the bounds
// Preview documents.
func TestPreviewCuts(t *testing.T) {
	long := strings.Repeat("长", 5000)
	in := func(v map[string]any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	s, p := Preview("Bash", in(map[string]any{"command": long}), "en")
	if want := "Bash: " + strings.Repeat("长", summaryRunes) + "…"; s != want {
		t.Errorf("bash summary is %d runes: %q", utf8.RuneCountInString(s), s)
	}
	if want := strings.Repeat("长", previewRunes) + "…"; p != want {
		t.Errorf("bash preview is %d runes", utf8.RuneCountInString(p))
	}

	// A description is cut too.
	_, p = Preview("Bash", in(map[string]any{"command": "ls", "description": long}), "en")
	if want := "ls\n(description: " + strings.Repeat("长", descRunes) + "…)"; p != want {
		t.Errorf("bash description: %q", p)
	}

	// A written file's lines are cut one by one, and the excerpt within
	// previewRunes: 2000 runes hold 9 lines of 201 runes and a line break.
	content := strings.Repeat(long+"\n", 30)
	s, p = Preview("Write", in(map[string]any{"file_path": "/" + long, "content": content}), "en")
	if want := "Write /" + strings.Repeat("长", summaryRunes-1) + "… (30 lines)"; s != want {
		t.Errorf("write summary: %q", s)
	}
	ls := strings.Split(p, "\n")
	if ls[0] != "/"+strings.Repeat("长", pathRunes-1)+"…" {
		t.Errorf("write path: %q", ls[0])
	}
	body := ls[1 : len(ls)-1]
	if len(body) != 10 || ls[len(ls)-1] != "… 20 more lines" {
		t.Errorf("write: %d lines shown, then %q", len(body), ls[len(ls)-1])
	}
	for _, l := range body {
		if l != strings.Repeat("长", lineRunes)+"…" {
			t.Fatalf("write line is %d runes", utf8.RuneCountInString(l))
		}
	}

	// A JSON preview is cut at previewRunes; each string at jsonStringRunes.
	_, p = Preview("X", in(map[string]any{"a": long}), "en")
	if want := "{\n  \"a\": \"" + strings.Repeat("长", jsonStringRunes) + "…\"\n}"; p != want {
		t.Errorf("JSON string: %q", p)
	}
	many := map[string]any{}
	for i := range 100 {
		many[fmt.Sprintf("k%03d", i)] = long
	}
	_, p = Preview("X", in(many), "en")
	if n := utf8.RuneCountInString(p); n != previewRunes+1 || !strings.HasSuffix(p, "…") || !utf8.ValidString(p) {
		t.Errorf("JSON preview is %d runes", n)
	}
}

// TestPreviewDoesNotChangeInput: Preview reads the input, never writes it.
func TestPreviewDoesNotChangeInput(t *testing.T) {
	in := json.RawMessage(`{"command":"curl -H 'Authorization: Bearer sk-abcdefghijklmnopqrstu'","password":"x"}`)
	keep := string(in)
	Preview("Bash", in, "en")
	if string(in) != keep {
		t.Fatalf("input changed: %s", in)
	}
}

// TestJSONPreviewTrim: leaving out what no preview can show changes no
// preview: a long array, an object of many keys and long strings show as
// they would whole.
func TestJSONPreviewTrim(t *testing.T) {
	items := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = "x"
		}
		return l
	}
	keys := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%05d", i)] = 1
		}
		return m
	}
	for _, c := range []struct{ whole, trimmed any }{
		{map[string]any{"a": items(5000)}, map[string]any{"a": items(trimItems)}},
		{keys(5000), keys(trimItems)},
		{[]any{strings.Repeat("é", 10000)}, []any{strings.Repeat("é", 4*jsonStringRunes+64)}},
	} {
		w, tr := jsonPreview(c.whole, true), jsonPreview(c.trimmed, true)
		if w != tr {
			t.Errorf("trimmed preview differs:\n%.200q\n%.200q", w, tr)
		}
		// Both are full: trimming left out nothing shown.
		if n := utf8.RuneCountInString(w); n != previewRunes+1 && !strings.Contains(w, strings.Repeat("é", jsonStringRunes)+"…") {
			t.Errorf("the preview is %d runes: %.200q", n, w)
		}
	}
	// A secret at the end of a long string is redacted, or not shown.
	long := strings.Repeat("a ", 700) + "password=SEKRETVALUE"
	if p := jsonPreview(map[string]any{"s": long}, true); strings.Contains(p, "SEKRET") {
		t.Errorf("secret shown: %q", p)
	}
	if p := jsonPreview(map[string]any{"s": "password=SEKRETVALUE " + strings.Repeat("a", 5000)}, true); strings.Contains(p, "SEKRET") || !strings.Contains(p, "password=[REDACTED]") {
		t.Errorf("secret shown: %q", p)
	}
}
