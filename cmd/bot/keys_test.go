package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// keyFamilies reads the key families of the table under "### Redis keys"
// in docs/ARCHITECTURE.md, each as a pattern for keys under prefix:
// {<shard>} is a hash tag of 8 hex digits, any other <name> one or more
// characters.
func keyFamilies(t *testing.T, prefix string) map[string]*regexp.Regexp {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "### Redis keys\n")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "### Redis keys" section`)
	}
	_, table, _ = strings.Cut(table, "```\n")
	table, _, _ = strings.Cut(table, "```")
	placeholder := regexp.MustCompile(`\\\{<shard>\\\}|<[a-z ]+>`)
	fams := map[string]*regexp.Regexp{}
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "<prefix>") {
			continue
		}
		fam := strings.Fields(line)[0]
		re := placeholder.ReplaceAllStringFunc(regexp.QuoteMeta(strings.TrimPrefix(fam, "<prefix>")), func(p string) string {
			if p == `\{<shard>\}` {
				return `\{[0-9a-f]{8}\}`
			}
			return `.+`
		})
		fams[fam] = regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + re + `$`)
	}
	if len(fams) < 10 {
		t.Fatalf("read %d key families from docs/ARCHITECTURE.md; the table's format changed", len(fams))
	}
	return fams
}

// keysDocumented fails t when a key under prefix in Redis belongs to no
// family of docs/ARCHITECTURE.md's table: what the code writes, the map
// says. It is called by the tests that run bot serve on Redis, when they
// end.
func keysDocumented(t *testing.T, c redis.UniversalClient, prefix string) {
	t.Helper()
	fams := keyFamilies(t, prefix)
	ctx := context.Background()
	it := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	undocumented := map[string]bool{}
	n := 0
	for it.Next(ctx) {
		k := it.Val()
		n++
		found := false
		for _, re := range fams {
			if re.MatchString(k) {
				found = true
				break
			}
		}
		if !found {
			undocumented[k] = true
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("scanning the test's keys: %v", err)
	}
	for k := range undocumented {
		t.Errorf("key %q is of no family docs/ARCHITECTURE.md's Redis key table lists", strings.TrimPrefix(k, prefix))
	}
	t.Logf("%d keys under the test's prefix, each of a documented family", n)
}

// TestKeyFamiliesRead: the table's patterns tell its families apart, and
// refuse a key of none (the check above can fail).
func TestKeyFamiliesRead(t *testing.T) {
	fams := keyFamilies(t, "hitl:t1:")
	for _, c := range []struct {
		key  string
		want bool
	}{
		{"hitl:t1:{0a1b2c3d}:ap:0a1b2c3d-xyz", true},
		{"hitl:t1:seen:resume:0a1b2c3d-xyz", true},
		{"hitl:t1:turnlock:feishu:oc_1", true},
		{"hitl:t1:{audit}:stream", true},
		{"hitl:t1:{0a1b2c3d}:nosuchfamily:1", false},
		{"hitl:t1:ap:0a1b2c3d-xyz", false}, // the record without its hash tag
		{"hitl:t2:due", false},
	} {
		got := false
		for _, re := range fams {
			got = got || re.MatchString(c.key)
		}
		if got != c.want {
			t.Errorf("%s documented: %v, want %v", c.key, got, c.want)
		}
	}
}
