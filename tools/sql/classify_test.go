package sqltool

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// classifyCases: driver "" means the same verdict on sqlite, postgres and mysql.
var classifyCases = []struct {
	driver string
	stmt   string
	want   Class
	verb   string // checked when not empty
}{
	// reads
	{"", "SELECT * FROM orders", ClassRead, "SELECT"},
	{"", "  select id from orders where status = 'cancelled'  ", ClassRead, "SELECT"},
	{"", "SELECT 1;", ClassRead, "SELECT"},
	{"", "SELECT 1; -- done", ClassRead, "SELECT"},
	{"", "((SELECT 1) UNION (SELECT 2))", ClassRead, "SELECT"},
	{"", "SELECT 'DELETE FROM orders; DROP TABLE x' AS s", ClassRead, "SELECT"},
	{"", "SELECT ';' AS semi, 'it''s' AS q", ClassRead, "SELECT"},
	{"", "-- DELETE FROM orders;\nSELECT 1", ClassRead, "SELECT"},
	{"", "/* DROP TABLE orders; */ SELECT 1", ClassRead, "SELECT"},
	{"", "SELECT \"delete\" FROM t", ClassRead, "SELECT"}, // quoted identifier (a string on MySQL)
	{"", "WITH c AS (SELECT * FROM orders WHERE status = 'paid') SELECT COUNT(*) FROM c", ClassRead, "SELECT"},
	{"", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT i FROM n", ClassRead, "SELECT"},
	{"", "with a as (select 1), b (x) as (select 2) select * from a, b", ClassRead, "SELECT"},
	{"", "EXPLAIN SELECT * FROM orders", ClassRead, "EXPLAIN"},
	{"", "VALUES (1, 'a'), (2, 'b')", ClassRead, "VALUES"},
	{"", "SELECT replace(customer, 'a', 'b') FROM orders", ClassRead, "SELECT"},
	{"sqlite", "EXPLAIN QUERY PLAN SELECT * FROM orders", ClassRead, "EXPLAIN"},
	{"sqlite", "PRAGMA table_info(orders)", ClassRead, "PRAGMA"},
	{"sqlite", "pragma main.table_info('orders')", ClassRead, "PRAGMA"},
	{"sqlite", "PRAGMA user_version", ClassRead, "PRAGMA"},
	{"sqlite", "SELECT [delete] FROM t", ClassRead, "SELECT"},
	{"sqlite", "SELECT `drop` FROM t", ClassRead, "SELECT"},
	{"postgres", "SELECT $$DELETE FROM orders; $$ AS body", ClassRead, "SELECT"},
	{"postgres", "SELECT $tag$ it's; DROP $tag$", ClassRead, "SELECT"},
	{"postgres", "SELECT 1 /* nested /* DROP TABLE x; */ still comment */", ClassRead, "SELECT"},
	{"postgres", "SHOW search_path", ClassRead, "SHOW"},
	{"postgres", "TABLE orders", ClassRead, "TABLE"},
	{"postgres", "EXPLAIN (ANALYZE, BUFFERS) SELECT 1", ClassRead, "EXPLAIN"},
	{"mysql", "SHOW TABLES", ClassRead, "SHOW"},
	{"mysql", "DESCRIBE orders", ClassRead, "DESCRIBE"},
	{"mysql", "SELECT 1 # DELETE FROM orders;", ClassRead, "SELECT"},
	{"mysql", `SELECT "a;b", 'it''s; DELETE' `, ClassRead, "SELECT"},
	{"mysql", `SELECT 'O\'Brien'`, ClassRefused, ""}, // refused: an unclosed literal under NO_BACKSLASH_ESCAPES
	{"mysql", "SELECT 1--1", ClassRead, "SELECT"},

	// writes
	{"", "INSERT INTO orders (customer, amount_cents, status, created_at) VALUES ('x', 1, 'paid', 'now')", ClassWrite, "INSERT"},
	{"", "update orders set status = 'paid' where id = 3", ClassWrite, "UPDATE"},
	{"", "UPDATE orders SET status = 'paid' WHERE id IN (SELECT id FROM orders WHERE customer = 'DELETE')", ClassWrite, "UPDATE"},
	{"", "CREATE TABLE t (id INTEGER PRIMARY KEY)", ClassWrite, "CREATE TABLE"},
	{"", "CREATE TABLE c (id INTEGER REFERENCES p(id) ON DELETE CASCADE)", ClassWrite, "CREATE TABLE"},
	{"", "CREATE UNIQUE INDEX i ON orders (customer)", ClassWrite, "CREATE INDEX"},
	{"", "ALTER TABLE orders ADD COLUMN note TEXT", ClassWrite, "ALTER TABLE"},
	{"", "WITH p AS (SELECT id FROM orders WHERE status = 'paid') UPDATE orders SET status = 'shipped' WHERE id IN (SELECT id FROM p)", ClassWrite, "UPDATE"},
	{"postgres", "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET v = excluded.v", ClassWrite, "INSERT"},
	{"postgres", "GRANT SELECT, DELETE ON orders TO bob", ClassWrite, "GRANT"},
	{"postgres", "COMMENT ON TABLE orders IS 'drop me later'", ClassWrite, "COMMENT"},
	{"postgres", "CREATE TRIGGER tr AFTER INSERT OR DELETE ON t FOR EACH ROW EXECUTE FUNCTION f()", ClassWrite, "CREATE TRIGGER"},

	// destructive
	{"", "DELETE FROM orders WHERE status = 'cancelled'", ClassDestructive, "DELETE"},
	{"", "delete from orders", ClassDestructive, "DELETE"},
	{"", "UPDATE orders SET status = 'paid'", ClassDestructive, "UPDATE"},
	{"", "UPDATE orders SET status = (SELECT status FROM orders WHERE id = 1)", ClassDestructive, "UPDATE"},
	{"", "DROP TABLE orders", ClassDestructive, "DROP TABLE"},
	{"", "DROP TABLE IF EXISTS a, b", ClassDestructive, "DROP TABLE"},
	{"", "DROP INDEX i", ClassDestructive, "DROP INDEX"},
	{"", "ALTER TABLE orders DROP COLUMN note", ClassDestructive, "ALTER TABLE"},
	{"", "WITH c AS (SELECT id FROM orders) DELETE FROM orders WHERE id IN (SELECT id FROM c)", ClassDestructive, "DELETE"},
	{"", "/* tidy up */ (DELETE FROM orders)", ClassDestructive, "DELETE"},
	{"postgres", "TRUNCATE orders", ClassDestructive, "TRUNCATE"},
	{"mysql", "TRUNCATE TABLE orders", ClassDestructive, "TRUNCATE"},
	{"mysql", "REPLACE INTO orders VALUES (1, 'x', 1, 'paid', 'now')", ClassDestructive, "REPLACE"},
	{"sqlite", "INSERT OR REPLACE INTO orders VALUES (1, 'x', 1, 'paid', 'now')", ClassDestructive, "INSERT"},
	{"postgres", "CREATE OR REPLACE VIEW v AS SELECT 1", ClassDestructive, "CREATE VIEW"},
	{"postgres", "CALL cleanup()", ClassDestructive, "CALL"},
	{"postgres", "DO $$ BEGIN DELETE FROM orders; END $$", ClassDestructive, "DO"},
	{"mysql", "CREATE TRIGGER t AFTER INSERT ON a FOR EACH ROW DELETE FROM b", ClassDestructive, "CREATE TRIGGER"},

	// refused
	{"", "", ClassRefused, ""},
	{"", "  -- only a comment\n", ClassRefused, ""},
	{"", "SELECT 1; DELETE FROM orders", ClassRefused, ""},
	{"", "SELECT 1;;", ClassRefused, ""},
	{"", "DELETE FROM orders WHERE id = 1; DELETE FROM orders WHERE id = 2", ClassRefused, ""},
	{"", "SELECT * FROM orders WHERE id = 1 FOR UPDATE", ClassRefused, "SELECT"},
	{"", "SELECT * INTO copy FROM orders", ClassRefused, "SELECT"},
	{"", "EXPLAIN ANALYZE DELETE FROM orders", ClassRefused, "EXPLAIN"},
	{"", "SELECT 'unterminated", ClassRefused, ""},
	{"", "SELECT 1 /* unterminated", ClassRefused, ""},
	{"", "SELECT (1", ClassRefused, ""},
	{"", "SELECT 1)", ClassRefused, ""},
	{"", "BEGIN", ClassRefused, "BEGIN"},
	{"", "COMMIT", ClassRefused, "COMMIT"},
	{"", "SET search_path = evil", ClassRefused, "SET"},
	{"", "'just a string'", ClassRefused, ""},
	{"", "FROBNICATE orders", ClassRefused, "FROBNICATE"},
	{"postgres", "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d", ClassRefused, "WITH"},
	{"postgres", "with x as (update orders set status = 'paid' returning id) select count(*) from x", ClassRefused, "WITH"},
	{"postgres", "COPY orders TO '/tmp/x'", ClassRefused, "COPY"},
	{"postgres", "SELECT 'a\\'; DELETE FROM orders; --'", ClassRefused, ""}, // depends on standard_conforming_strings
	{"postgres", "SELECT E'a\\'; DELETE FROM orders", ClassRefused, ""},
	{"postgres", "SELECT $$ unterminated", ClassRefused, ""},
	{"postgres", "PRAGMA user_version", ClassRefused, "PRAGMA"},
	{"sqlite", "PRAGMA user_version = 7", ClassRefused, "PRAGMA"},
	{"sqlite", "PRAGMA query_only(0)", ClassRefused, "PRAGMA"},
	{"sqlite", "PRAGMA optimize", ClassRefused, "PRAGMA"},
	{"sqlite", "ATTACH DATABASE '/etc/x' AS x", ClassRefused, "ATTACH"},
	{"sqlite", "VACUUM", ClassRefused, "VACUUM"},
	{"sqlite", "SELECT $$; DELETE FROM orders; $$", ClassRefused, ""}, // no dollar quoting in SQLite
	{"mysql", "SELECT 1 /*! ; DELETE FROM orders */", ClassRefused, ""},
	{"mysql", "SELECT 1 /*!50000 , (DELETE) */", ClassRefused, "SELECT"},
	{"mysql", "SELECT 'it\\'s'; DELETE FROM orders; -- '", ClassRefused, ""},
	{"mysql", "SELECT 'a\\'; DELETE FROM orders; -- '", ClassRefused, ""},
	{"mysql", "USE other", ClassRefused, "USE"},
	{"mysql", "LOCK TABLES orders WRITE", ClassRefused, "LOCK"},
	{"mysql", "LOAD DATA INFILE '/etc/passwd' INTO TABLE t", ClassRefused, "LOAD"},
	{"mysql", "SELECT * FROM orders INTO OUTFILE '/tmp/x'", ClassRefused, "SELECT"},
	// A named parameter or variable is a value, not a keyword: these have
	// no WHERE clause and change every row.
	{"sqlite", "UPDATE orders SET status = :where", ClassDestructive, "UPDATE"},
	{"sqlite", "UPDATE orders SET status = $WHERE", ClassDestructive, "UPDATE"},
	{"sqlite", "UPDATE orders SET status = @where", ClassDestructive, "UPDATE"},
	{"mysql", "UPDATE orders SET status = @where", ClassDestructive, "UPDATE"},
	{"mysql", "UPDATE orders SET status = @@where", ClassDestructive, "UPDATE"},
	{"sqlite", "UPDATE orders SET status = :s WHERE id = :id", ClassWrite, "UPDATE"},
	{"sqlite", "SELECT :delete", ClassRefused, "SELECT"}, // a read keeps to the plain rule
	{"sqlite", "SELECT :id", ClassRead, "SELECT"},
	{"mysql", "SELECT @@global.sql_mode", ClassRead, "SELECT"},
	{"", "UPDATE or", ClassDestructive, "UPDATE"}, // once a panic
}

var drivers = []string{"sqlite", "postgres", "mysql"}

func TestClassify(t *testing.T) {
	if len(classifyCases) < 40 {
		t.Fatalf("only %d cases", len(classifyCases))
	}
	for _, tc := range classifyCases {
		ds := drivers
		if tc.driver != "" {
			ds = []string{tc.driver}
		}
		for _, d := range ds {
			got := Classify(d, tc.stmt)
			if got.Class != tc.want || tc.verb != "" && got.Verb != tc.verb {
				t.Errorf("Classify(%s, %q) = %v %q (%s), want %v %q", d, tc.stmt, got.Class, got.Verb, got.Reason, tc.want, tc.verb)
			}
			if got.Class == ClassRefused && got.Reason == "" {
				t.Errorf("Classify(%s, %q): refused without a reason", d, tc.stmt)
			}
			if got.Statement != strings.TrimSpace(tc.stmt) {
				t.Errorf("Classify(%s, %q).Statement = %q", d, tc.stmt, got.Statement)
			}
		}
	}
}

// targetCases check the tables a preview counts rows of.
var targetCases = []struct {
	driver, stmt string
	want         []string
	ifExists     bool
}{
	{"sqlite", "DROP TABLE orders", []string{"orders"}, false},
	{"postgres", `DROP TABLE IF EXISTS public.orders, "Odd Name" CASCADE`, []string{"public.orders", `"Odd Name"`}, true},
	{"mysql", "DROP TEMPORARY TABLE `a`", []string{"`a`"}, false},
	{"postgres", "TRUNCATE TABLE ONLY a, b RESTART IDENTITY", []string{"a", "b"}, false},
	{"postgres", "DELETE FROM ONLY orders WHERE id = 1", []string{"orders"}, false},
	{"mysql", "UPDATE LOW_PRIORITY orders SET a = 1 WHERE id = 2", []string{"orders"}, false},
	{"sqlite", "UPDATE OR REPLACE orders SET a = 1", []string{"orders"}, false},
	{"sqlite", "INSERT INTO main.orders (id) VALUES (1)", []string{"main.orders"}, false},
}

func TestClassifyTargets(t *testing.T) {
	for _, tc := range targetCases {
		c := Classify(tc.driver, tc.stmt)
		if strings.Join(c.targets, "|") != strings.Join(tc.want, "|") || c.ifExists != tc.ifExists {
			t.Errorf("Classify(%s, %q): targets %q ifExists %v, want %q %v", tc.driver, tc.stmt, c.targets, c.ifExists, tc.want, tc.ifExists)
		}
	}
}

func TestClassificationEffect(t *testing.T) {
	for class, want := range map[Class]string{
		ClassRead: "read", ClassWrite: "write", ClassDestructive: "destructive", ClassRefused: "destructive",
	} {
		if got := (Classification{Class: class}).Effect(); string(got) != want {
			t.Errorf("Effect of %v = %s, want %s", class, got, want)
		}
	}
	if got := Classify("oracle", "SELECT 1"); got.Class != ClassRefused {
		t.Errorf("unknown driver: %v, want refused", got.Class)
	}
}

// forbiddenInRead are keyword tokens a read must never contain.
var forbiddenInRead = map[string]bool{"DELETE": true, "UPDATE": true, "INSERT": true, "DROP": true}

// stripSQLite is an independent, simple reading of SQLite's lexical rules:
// it blanks out literals, quoted identifiers and comments. ok is false when
// a literal or comment is not closed.
func stripSQLite(s string) (code string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		var end string
		switch {
		case s[i] == '\'':
			end = "'"
		case s[i] == '"':
			end = `"`
		case s[i] == '`':
			end = "`"
		case s[i] == '[':
			end = "]"
		case strings.HasPrefix(s[i:], "--"):
			end = "\n"
		case strings.HasPrefix(s[i:], "/*"):
			end = "*/"
		default:
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i + 1
		if end == "*/" {
			j = i + 2
		}
		for {
			k := strings.Index(s[j:], end)
			if k < 0 {
				if end == "\n" {
					return b.String(), true
				}
				return "", false
			}
			j += k + len(end)
			// a doubled quote continues the literal
			if len(end) == 1 && end != "]" && end != "\n" && j < len(s) && s[j] == end[0] {
				j++
				continue
			}
			break
		}
		b.WriteByte(' ')
		i = j
	}
	return b.String(), true
}

func codeWords(code string) []string {
	return strings.FieldsFunc(code, func(r rune) bool {
		return !(r == '_' || r == '$' || r >= 0x80 || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
}

func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases {
		f.Add(tc.stmt)
	}
	for _, tc := range highCases {
		f.Add(tc.stmt)
	}
	f.Fuzz(func(t *testing.T, stmt string) {
		for _, d := range drivers {
			c := Classify(d, stmt)
			if c.Statement != strings.TrimSpace(stmt) {
				t.Fatalf("%s: Statement %q", d, c.Statement)
			}
			if again := Classify(d, stmt); again.Class != c.Class || again.Verb != c.Verb || again.High != c.High {
				t.Fatalf("%s: not deterministic", d)
			}
			if c.Class == ClassRefused && c.Reason == "" {
				t.Fatalf("%s: refused without reason", d)
			}
			// HIGH whatever the rows: every destructive change, every
			// change that is not INSERT, UPDATE or MERGE; said in both
			// languages. Reads and refusals are never "HIGH" here.
			switch {
			case (c.Class == ClassRead || c.Class == ClassRefused) && !c.High.IsZero():
				t.Fatalf("%s: %v %q has a HIGH reason %+v", d, c.Class, stmt, c.High)
			case c.Class == ClassDestructive && (c.High.EN == "" || c.High.ZH == ""):
				t.Fatalf("%s: destructive %q without a HIGH reason in both languages: %+v", d, stmt, c.High)
			case c.Class == ClassWrite && c.High.IsZero() && c.Verb != "INSERT" && c.Verb != "UPDATE" && c.Verb != "MERGE":
				t.Fatalf("%s: %s %q is not HIGH", d, c.Verb, stmt)
			case c.Class == ClassWrite && (c.High.EN == "") != (c.High.ZH == ""):
				t.Fatalf("%s: %q has a HIGH reason in one language only: %+v", d, stmt, c.High)
			}
		}
		c := Classify("sqlite", stmt)
		if c.Class == ClassWrite && c.High.IsZero() && (c.Verb == "UPDATE" || c.Verb == "DELETE") && utf8.ValidString(stmt) {
			// An UPDATE or DELETE that is not HIGH has a WHERE in its code.
			code, ok := stripSQLite(c.Statement)
			if !ok || !slices.ContainsFunc(codeWords(code), func(w string) bool { return strings.EqualFold(w, "WHERE") }) {
				t.Fatalf("%s %q without WHERE is not HIGH", c.Verb, stmt)
			}
		}
		if c.Class != ClassRead || !utf8.ValidString(stmt) {
			return
		}
		code, ok := stripSQLite(c.Statement)
		if !ok {
			t.Fatalf("read %q has an unclosed literal or comment", stmt)
		}
		for _, w := range codeWords(code) {
			if forbiddenInRead[strings.ToUpper(w)] {
				t.Fatalf("read %q contains the keyword %s", stmt, w)
			}
		}
		if i := strings.IndexByte(code, ';'); i >= 0 && strings.TrimSpace(code[i+1:]) != "" {
			t.Fatalf("read %q holds more than one statement", stmt)
		}
	})
}
