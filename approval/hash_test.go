package approval

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

type canonTest struct {
	in   string
	want string // canonical form; "" means an error is expected
}

var canonTests = []canonTest{
	{`{}`, `{}`},
	{` { "b" : 1 , "a" : 2 } `, `{"a":2,"b":1}`},
	{`{"a":{"d":[3,2,1],"c":null}}`, `{"a":{"c":null,"d":[3,2,1]}}`},
	{`{"n":1.50}`, `{"n":1.50}`}, // numbers kept exactly as written
	{`{"n":1e3,"m":-0,"k":12345678901234567890}`, `{"k":12345678901234567890,"m":-0,"n":1e3}`},
	{`{"s":"<a&b>"}`, `{"s":"<a&b>"}`}, // no HTML escaping
	{`{"s":"line\nbreak \u00e9 \ud83d\ude00"}`, "{\"s\":\"line\\nbreak é 😀\"}"},
	{`{"é":1,"e":2,"z":3,"A":4}`, `{"A":4,"e":2,"z":3,"é":1}`}, // byte order
	{`[true,false,null,"x"]`, `[true,false,null,"x"]`},
	{`"just a string"`, `"just a string"`},
	{`{"a":1,"a":2}`, ""}, // duplicate key
	{`{"a":1} {"b":2}`, ""},
	{`{"a":`, ""},
	{`{a:1}`, ""},
	{``, ""},
	{`[1,]`, ""},
}

func TestCanonicalize(t *testing.T) {
	for _, tt := range canonTests {
		got, err := Canonicalize([]byte(tt.in))
		if tt.want == "" {
			if err == nil {
				t.Errorf("%q: got %s, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%q: got %s, %v; want %s", tt.in, got, err, tt.want)
		}
		// Canonical form is a fixed point.
		if again, _ := Canonicalize(got); string(again) != string(got) {
			t.Errorf("%q: canonical form not stable: %s -> %s", tt.in, got, again)
		}
	}
}

// hashTests are hashed into testdata/payload_hashes.golden: a change of the
// hash function would invalidate every pending card, so it must be
// deliberate (go test -run TestPayloadHashGolden -update).
var hashTests = []struct{ tool, args string }{
	{"sql_execute", `{"statement":"DELETE FROM orders WHERE status = 'cancelled'","database":"demo"}`},
	{"sql_execute", `{"database":"demo","statement":"DELETE FROM orders WHERE status = 'cancelled'"}`},
	{"sql_query", `{"statement":"SELECT 1"}`},
	{"task_create", `{"title":"买牛奶","due":"2026-11-30"}`},
	{"task_delete", `{"id":3}`},
	{"task_delete", `{"id":3.0}`},
	{"http_refund", `{}`},
	{"http_refund", ``},
}

func TestPayloadHashGolden(t *testing.T) {
	var b strings.Builder
	for _, tt := range hashTests {
		args, h, err := HashCall(tt.tool, []byte(tt.args))
		if err != nil {
			t.Fatalf("%s %s: %v", tt.tool, tt.args, err)
		}
		if h != PayloadHash(tt.tool, args) || len(h) != 64 {
			t.Fatalf("%s: HashCall and PayloadHash disagree", tt.tool)
		}
		fmt.Fprintf(&b, "%s %s %s\n", h, tt.tool, args)
	}
	checkGolden(t, "testdata/payload_hashes.golden", b.String())
	lines := strings.Split(b.String(), "\n")
	if lines[0][:64] != lines[1][:64] {
		t.Error("the same arguments in another key order hash differently")
	}
	if lines[4][:64] == lines[5][:64] {
		t.Error("3 and 3.0 hash the same; numbers must be kept as written")
	}
	if lines[6][:64] != lines[7][:64] {
		t.Error("empty arguments and {} hash differently")
	}
	if PayloadHash("a", []byte(`{}`)) == PayloadHash("b", []byte(`{}`)) {
		t.Error("the tool name is not part of the hash")
	}
}

func TestBatchHash(t *testing.T) {
	one := []Call{{PayloadSHA256: "aa"}}
	if BatchHash(one) != "aa" {
		t.Error("a batch of one must have the call's own hash")
	}
	ab, ba := BatchHash([]Call{{PayloadSHA256: "aa"}, {PayloadSHA256: "bb"}}), BatchHash([]Call{{PayloadSHA256: "bb"}, {PayloadSHA256: "aa"}})
	if ab == ba || len(ab) != 64 {
		t.Error("batch order must matter")
	}
}

func TestIDs(t *testing.T) {
	id := NewID("feishu:oc_1")
	shard, ok := id.Shard()
	if !ok || shard != Shard("feishu:oc_1") || !id.Valid() {
		t.Fatalf("NewID = %s (shard %s, ok %v)", id, shard, ok)
	}
	if NewID("feishu:oc_1") == id {
		t.Fatal("two ids are equal")
	}
	for _, bad := range []ID{"", "ap_", "ap_1234567_" + ID(strings.Repeat("a", 32)), ID(strings.Replace(string(id), "_", "-", 1)), id + "0", ID(strings.ToUpper(string(id)))} {
		if bad.Valid() {
			t.Errorf("%q is valid", bad)
		}
	}
}

func FuzzCanonicalize(f *testing.F) {
	for _, tt := range canonTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := Canonicalize([]byte(in))
		if err != nil {
			return
		}
		again, err := Canonicalize(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("canonical form of %q is not stable: %q -> %q, %v", in, c, again, err)
		}
	})
}

// pinnedHashTests are hashed into testdata/pinned_hashes.golden, as
// hashTests: the same call under two definitions, and two calls under one.
var pinnedHashTests = []struct{ tool, args, definition string }{
	{"fs__write_file", `{"path":"/srv/share/a.txt","content":"hi"}`, "3f1c0d5e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f"},
	{"fs__write_file", `{"content":"hi","path":"/srv/share/a.txt"}`, "3f1c0d5e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f"},
	{"fs__write_file", `{"content":"hi","path":"/srv/share/a.txt"}`, "00000000000000000000000000000000000000000000000000000000000000ff"},
	{"fs__read_file", `{"path":"/srv/share/a.txt"}`, "3f1c0d5e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f"},
}

func TestPinnedHashGolden(t *testing.T) {
	var b strings.Builder
	for _, tt := range pinnedHashTests {
		args, plain, err := HashCall(tt.tool, []byte(tt.args))
		if err != nil {
			t.Fatalf("%s %s: %v", tt.tool, tt.args, err)
		}
		h := PinnedHash(tt.tool, args, tt.definition)
		if h == plain || len(h) != 64 {
			t.Fatalf("%s: a pinned hash must differ from the plain one", tt.tool)
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", h, tt.tool, args, ShortHash(tt.definition))
	}
	checkGolden(t, "testdata/pinned_hashes.golden", b.String())
	lines := strings.Split(b.String(), "\n")
	if lines[0][:64] != lines[1][:64] {
		t.Error("the same arguments in another key order hash differently")
	}
	if lines[1][:64] == lines[2][:64] {
		t.Error("the same call under another definition hashes the same: the definition is not pinned")
	}
}

// checkGolden compares got with the golden file (-update rewrites it).
func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: hashes changed:\n got:\n%s\nwant:\n%s", golden, got, want)
	}
}

// fastPathTests are documents isCanonical must judge as canonicalize
// does: canonical ones it may take, anything else it must leave to it.
var fastPathTests = []string{
	`{}`, `[]`, `{"a":1}`, `{"a":1,"b":[true,false,null,"x"]}`, `{"n":-0.5e+10,"m":0,"o":1E3}`,
	`{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a" :1}`, ` {"a":1}`, `{"a":1} `, `{"a":"<&>"}`,
	`{"a":"\u0041"}`, `{"a":"\n"}`, `{"a":"é"}`, `{"a":"\"q\""}`, `[01]`, `[1.]`, `[.5]`, `[-]`, `[1e]`,
	`[1,]`, `[,1]`, `{"a":}`, `{"a"}`, `{,}`, `nul`, `truex`, `[true,fals]`, `"x"`, `12`, `-0`, `""`,
	`{"":1,"a":{"":[]}}`, `{"A":1,"a":2}`, `{"a":2,"A":1}`, `{"ab":1,"a":2}`, `{"a":2,"ab":1}`, `[[[[[]]]]]`,
	strings.Repeat("[", 70) + strings.Repeat("]", 70),
}

// TestCanonicalizeFastPathAgrees: a document isCanonical takes is one
// the full canonicalisation returns unchanged, and Canonicalize answers
// every document as that does.
func TestCanonicalizeFastPathAgrees(t *testing.T) {
	ins := append([]string(nil), fastPathTests...)
	for _, tt := range canonTests {
		ins = append(ins, tt.in)
	}
	for _, in := range ins {
		checkFastPath(t, in)
	}
	if !isCanonical([]byte(`{"a":1,"b":[true,null]}`)) || isCanonical([]byte(`{"b":1,"a":2}`)) {
		t.Error("isCanonical does not tell a canonical document from another")
	}
}

func checkFastPath(t *testing.T, in string) {
	t.Helper()
	slow, serr := canonicalize([]byte(in))
	if isCanonical([]byte(in)) && (serr != nil || string(slow) != in) {
		t.Errorf("%q: taken as canonical, but canonicalize gives %q, %v", in, slow, serr)
	}
	got, err := Canonicalize([]byte(in))
	if (err == nil) != (serr == nil) || string(got) != string(slow) {
		t.Errorf("%q: Canonicalize gives %q, %v; canonicalize %q, %v", in, got, err, slow, serr)
	}
}

func FuzzCanonicalizeFastPath(f *testing.F) {
	for _, in := range fastPathTests {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) { checkFastPath(t, in) })
}
