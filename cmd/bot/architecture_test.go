package main

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goName is a Go name as docs/ARCHITECTURE.md cites it in backquotes:
// Name, Type.Method or pkg.Name[.Method] (an exported last part), with an
// optional "()" after it.
var goName = regexp.MustCompile("`((?:[a-z][a-z0-9]*\\.)?(?:[A-Z][A-Za-z0-9_]*\\.)?[A-Z][A-Za-z0-9_]*)(?:\\(\\))?`")

// envName is an environment variable's or a platform constant's name.
var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// declared returns, for every package directory of the module under root
// (third_party left out), the names its Go files, tests included, declare:
// types, functions, methods, fields, interface methods, constants and
// variables; and, keyed "\x00"+s, the short strings they spell.
// It is keyed by the package's name, so "approval" holds the names of
// approval/ and of every other package called approval.
func declared(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	byPkg := map[string]map[string]bool{}
	fset := gotoken.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "third_party" || n == "node_modules" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := strings.TrimSuffix(f.Name.Name, "_test") // an external test package is its package's
		names := byPkg[pkg]
		if names == nil {
			names = map[string]bool{}
			byPkg[pkg] = names
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				// A name the code spells as a string: a table test's
				// name, another program's tool ("AskUserQuestion").
				if n.Kind == gotoken.STRING {
					if v, err := strconv.Unquote(n.Value); err == nil && len(v) < 64 {
						names["\x00"+v] = true
					}
				}
			case *ast.FuncDecl:
				names[n.Name.Name] = true
			case *ast.TypeSpec:
				names[n.Name.Name] = true
			case *ast.ValueSpec:
				for _, id := range n.Names {
					names[id.Name] = true
				}
			case *ast.Field:
				for _, id := range n.Names {
					names[id.Name] = true
				}
				if len(n.Names) == 0 { // an embedded type is a field of its name
					if id, ok := typeName(n.Type); ok {
						names[id] = true
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return byPkg
}

// typeName is the name of an embedded field's type: T, *T, pkg.T.
func typeName(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name, true
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name, true
	case *ast.IndexExpr:
		return typeName(e.X)
	}
	return "", false
}

// TestArchitectureNamesExist keeps docs/ARCHITECTURE.md true to the code:
// every Go name it cites is declared (a name of a package it qualifies,
// in that package). A renamed or removed type, function or field fails
// here until the map is updated.
func TestArchitectureNamesExist(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	byPkg := declared(t, root)
	all := map[string]bool{}
	for _, names := range byPkg {
		for n := range names {
			all[n] = true
		}
	}
	seen := map[string]bool{}
	for _, m := range goName.FindAllStringSubmatch(string(doc), -1) {
		cited := m[1]
		if seen[cited] {
			continue
		}
		seen[cited] = true
		if envName.MatchString(cited) {
			continue // an environment variable or a platform's constant
		}
		parts := strings.Split(cited, ".")
		in := all
		if p := parts[0]; p[0] >= 'a' && p[0] <= 'z' {
			names, ok := byPkg[p]
			if !ok {
				continue // a lower-case first part that is no package: a config key, a file
			}
			in, parts = names, parts[1:]
		}
		for i, p := range parts {
			if len(parts) == 1 && all["\x00"+p] {
				break // a name the code has as a string
			}
			if i == 0 && !in[p] || !all[p] {
				t.Errorf("docs/ARCHITECTURE.md cites `%s`, but %s is not declared (where it says)", cited, p)
				break
			}
		}
	}
	if len(seen) < 50 {
		t.Fatalf("found %d Go names in docs/ARCHITECTURE.md; the pattern no longer reads it", len(seen))
	}
}
