package config

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/go-viper/mapstructure/v2"
)

// Problem is one thing wrong with a config, at a YAML path.
type Problem struct {
	// Path is the key, e.g. "approval.policy.grant_window" or
	// "tools.http[0].url"; "" for the file as a whole.
	Path string
	// Msg says what is wrong and, where it helps, what to do.
	Msg string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Problems is every problem found; as an error it lists them one per line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Err returns ps as an error, or nil when there are none.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

func (ps *Problems) add(path, msg string) { *ps = append(*ps, Problem{Path: path, Msg: msg}) }

// addErr adds err under path, one problem per joined error. A line of the
// error that already starts with a key ("replies.confirm[0]: …") is put
// under path with that key appended.
func (ps *Problems) addErr(path string, err error) {
	if err == nil {
		return
	}
	for _, e := range leaves(err) {
		msg := e.Error()
		if k, rest, ok := strings.Cut(msg, ": "); ok && keyLike.MatchString(k) {
			ps.add(join(path, k), rest)
			continue
		}
		// "model.openai.model is required": a full path as the first word.
		if w, rest, ok := strings.Cut(msg, " "); ok && path == "" && strings.Contains(w, ".") && keyLike.MatchString(w) {
			ps.add(w, rest)
			continue
		}
		ps.add(path, msg)
	}
}

// keyLike matches a YAML path at the start of a message.
var keyLike = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\[[^\]]+\]|\.[A-Za-z0-9_-]+)*$`)

// leaves flattens joined errors.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// Has reports whether a problem sits at path.
func (ps Problems) Has(path string) bool {
	return slices.ContainsFunc(ps, func(p Problem) bool { return p.Path == path })
}

var mapIndex = regexp.MustCompile(`\[([^\]0-9][^\]]*)\]`)

// decodePath turns mapstructure's names into YAML paths: map keys in
// brackets become dotted keys; list indexes stay in brackets.
func decodePath(name string) string { return mapIndex.ReplaceAllString(name, ".$1") }

// addDecodeErr adds the problems of a mapstructure decode, each at its key.
func (ps *Problems) addDecodeErr(prefix string, err error) {
	for err != nil {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				ps.addDecodeErr(prefix, e)
			}
			return
		}
		var de *mapstructure.DecodeError
		if errors.As(err, &de) && de == err {
			name := join(prefix, decodePath(de.Name()))
			cause := de.Unwrap()
			msg := ""
			if cause != nil {
				msg = cause.Error()
			}
			if keys, ok := strings.CutPrefix(msg, "has invalid keys: "); ok {
				for _, k := range strings.Split(keys, ", ") {
					ps.add(join(name, k), unknownKey(join(name, k)))
				}
				return
			}
			ps.add(name, msg)
			return
		}
		if u, ok := err.(interface{ Unwrap() error }); ok && u.Unwrap() != nil {
			// fmt.Errorf("decoding failed …: %w", joined)
			err = u.Unwrap()
			continue
		}
		ps.add(prefix, err.Error())
		return
	}
}
