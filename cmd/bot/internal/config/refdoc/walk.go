package refdoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
)

var (
	secretType   = reflect.TypeFor[config.Secret]()
	durationType = reflect.TypeFor[time.Duration]()
)

// Key is one key of the YAML file, as the reference shows it.
type Key struct {
	// Path is the dotted path; a list's entries add [] and a map's values .*.
	Path string
	// Name is the last part of Path, the key as written in the file.
	Name string
	// Type is the field's Go type.
	Type reflect.Type
	// InList reports a key inside a list entry or a map value: it has no
	// default of its own in defaults.yaml.
	InList bool
	// Comment is the field's doc comment, as written in the source.
	Comment string
	// GoName is the field's Go name.
	GoName string
	// Doc is Comment cleaned for a reader of the YAML: without the
	// field's Go name in front, other fields named by their keys.
	Doc string
	// Default is the value the loader gives the key when nothing sets it,
	// as YAML writes it; "" for empty, "-" for unset.
	Default string
	// HasDefault reports a default named in defaults.yaml.
	HasDefault bool
	// Env is how the environment sets the key; nil when it cannot.
	Env *Env
	// Secret reports a secret: never in the file, only from the
	// environment or SecretFile.
	Secret bool
	// SecretFile is the key naming a file that holds the secret, if any.
	SecretFile string
	// Fields are the Go names of the fields of the struct that declares
	// the key, with their keys, to write them as keys in the comment.
	Fields map[string]string
}

// comments holds the parsed doc comments of the structs of this module:
// package path -> type name -> field name -> comment.
type comments struct {
	root, module string
	pkgs         map[string]map[string]map[string]string
}

func (c *comments) of(t reflect.Type, field string) (string, error) {
	pkg, ok := c.pkgs[t.PkgPath()]
	if !ok {
		rel, ok := strings.CutPrefix(t.PkgPath(), c.module)
		if !ok {
			return "", fmt.Errorf("%s is outside the module %s", t.PkgPath(), c.module)
		}
		var err error
		if pkg, err = parsePackage(filepath.Join(c.root, filepath.FromSlash(strings.TrimPrefix(rel, "/")))); err != nil {
			return "", err
		}
		c.pkgs[t.PkgPath()] = pkg
	}
	fields, ok := pkg[t.Name()]
	if !ok {
		return "", fmt.Errorf("no struct %s in the source of %s", t.Name(), t.PkgPath())
	}
	return fields[field], nil
}

// parsePackage reads the doc comment of every field of every struct type
// declared in the non-test Go files of dir.
func parsePackage(dir string) (map[string]map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]string{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				fields := map[string]string{}
				for _, fl := range st.Fields.List {
					text := fl.Doc.Text()
					if text == "" {
						text = fl.Comment.Text()
					}
					for _, n := range fl.Names {
						fields[n.Name] = text
					}
					if len(fl.Names) == 0 { // embedded: named by its type
						fields[embeddedName(fl.Type)] = text
					}
				}
				out[ts.Name.Name] = fields
			}
		}
	}
	return out, nil
}

func embeddedName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return embeddedName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// walk lists the keys under t in the order of the structs, as the config
// package's allKeys finds them: struct fields by their mapstructure key,
// squashed structs in place, list entries as [] and map values as .*.
func (c *comments) walk(t reflect.Type, prefix string, inList bool, out *[]Key) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType || t == secretType {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		names := map[string]string{}
		structNames(t, names)
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			key, squash, skip := config.FieldKey(f)
			switch {
			case skip:
			case squash:
				if err := c.walk(f.Type, prefix, inList, out); err != nil {
					return err
				}
			default:
				text, err := c.of(t, f.Name)
				if err != nil {
					return err
				}
				path := join(prefix, key)
				if strings.TrimSpace(text) == "" {
					return fmt.Errorf("%s (%s.%s.%s) has no comment: write one in the source", path, t.PkgPath(), t.Name(), f.Name)
				}
				*out = append(*out, Key{Path: path, Name: key, Type: f.Type, InList: inList, Comment: text, GoName: f.Name, Fields: names})
				if err := c.walk(f.Type, path, inList, out); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		return c.walk(t.Elem(), prefix+".*", true, out)
	case reflect.Slice:
		return c.walk(t.Elem(), prefix+"[]", true, out)
	}
	return nil
}

// structNames maps the Go names of t's fields (squashed ones included) to
// their keys.
func structNames(t reflect.Type, into map[string]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, squash, skip := config.FieldKey(f)
		switch {
		case skip:
		case squash:
			structNames(f.Type, into)
		default:
			into[f.Name] = key
		}
	}
}
