package mcptool

import (
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/internal/redact"
)

// errSecretName is why a tool whose name holds one of its server's secrets
// is not offered. It holds no secret.
const errSecretName = "its name holds the value of one of the server's env or headers variables"

// errKeysAlike is why a tool whose schema would hold one key twice once
// its secrets are hidden is not offered.
var errKeysAlike = errors.New("two of its keys read alike once the server's secrets are hidden")

// hideSecrets returns a copy of mt with the server's secrets (the values
// of its env and headers variables) hidden in every string the client
// keeps of it: the title, the description, the annotations' title, and
// every string of the input and output schemas, keys included (property
// names, enums, defaults, descriptions, patterns). It is done when a list
// is read, before anything else looks at the tool, so the definition
// pinned by its digest is the one shown to the model and to approvers.
// The name is left alone: a tool whose name holds a secret is refused
// (nameHoldsSecret), since its name is what the server is called with.
func (s *server) hideSecrets(mt *mcp.Tool) (*mcp.Tool, error) {
	out := *mt
	out.Title = s.scrub.Hide(mt.Title)
	out.Description = s.scrub.Hide(mt.Description)
	if mt.Annotations != nil {
		a := *mt.Annotations
		a.Title = s.scrub.Hide(a.Title)
		out.Annotations = &a
	}
	var err error
	if out.InputSchema, err = hideInJSON(mt.InputSchema, s.scrub); err != nil {
		return nil, err
	}
	if out.OutputSchema, err = hideInJSON(mt.OutputSchema, s.scrub); err != nil {
		return nil, err
	}
	// _meta and icons are never read, shown or hashed: drop them rather
	// than keep what may hold a secret.
	out.Meta = nil
	out.Icons = nil
	return &out, nil
}

// nameHoldsSecret reports whether the server's name for a tool holds one
// of its secrets.
func (s *server) nameHoldsSecret(name string) bool { return s.scrub.Hide(name) != name }

// hideInJSON returns v as a plain JSON value (maps, slices, strings,
// float64, bool, nil) with every string and key scrubbed. nil stays nil.
func hideInJSON(v any, scrub redact.Values) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return nil, err
	}
	return hideIn(plain, scrub)
}

// hideIn scrubs every string of a plain JSON value, keys included.
func hideIn(v any, scrub redact.Values) (any, error) {
	switch v := v.(type) {
	case string:
		return scrub.Hide(v), nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			y, err := hideIn(x, scrub)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			hk := scrub.Hide(k)
			if _, dup := out[hk]; dup {
				return nil, errKeysAlike
			}
			y, err := hideIn(x, scrub)
			if err != nil {
				return nil, err
			}
			out[hk] = y
		}
		return out, nil
	default:
		return v, nil
	}
}
