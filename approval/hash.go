package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Canonicalize returns the canonical form of a JSON document: object keys
// sorted (by their UTF-8 bytes), no insignificant white space, numbers kept
// exactly as written, strings re-encoded without HTML escaping. Duplicate
// object keys are an error, because two parsers could read them differently.
func Canonicalize(doc []byte) (json.RawMessage, error) {
	if isCanonical(doc) {
		// Nearly every document canonicalized is canonical already (the
		// engine canonicalizes what the agent loop did): the same bytes,
		// without decoding them token by token.
		return json.RawMessage(bytes.Clone(doc)), nil
	}
	return canonicalize(doc)
}

// canonicalize is Canonicalize for any document.
func canonicalize(doc []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := canonValue(dec, &buf); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonical json: trailing data after the document")
	}
	return json.RawMessage(buf.Bytes()), nil
}

func canonValue(dec *json.Decoder, buf *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return errors.New("unexpected end of document")
		}
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			type member struct {
				key string
				val []byte
			}
			var members []member
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, ok := kt.(string)
				if !ok {
					return fmt.Errorf("object key is %T, not a string", kt)
				}
				if seen[key] {
					return fmt.Errorf("duplicate object key %q", key)
				}
				seen[key] = true
				var vb bytes.Buffer
				if err := canonValue(dec, &vb); err != nil {
					return err
				}
				members = append(members, member{key, vb.Bytes()})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return err
			}
			sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
			buf.WriteByte('{')
			for i, m := range members {
				if i > 0 {
					buf.WriteByte(',')
				}
				writeString(buf, m.key)
				buf.WriteByte(':')
				buf.Write(m.val)
			}
			buf.WriteByte('}')
		case '[':
			buf.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				if err := canonValue(dec, buf); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ']'
				return err
			}
			buf.WriteByte(']')
		default:
			return fmt.Errorf("unexpected delimiter %q", t)
		}
	case string:
		writeString(buf, t)
	case json.Number:
		buf.WriteString(string(t))
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case nil:
		buf.WriteString("null")
	default:
		return fmt.Errorf("unexpected token %T", tok)
	}
	return nil
}

// isCanonical reports whether doc is a JSON document that canonicalize
// returns unchanged, of a form it can tell at a glance: no white space,
// object keys in strictly increasing byte order (so no duplicate), and
// strings of printable ASCII without escapes (which re-encode as they
// are). It may say false of a canonical document: canonicalize decides.
func isCanonical(doc []byte) bool {
	i, ok := canonicalAt(doc, 0, 0)
	return ok && i == len(doc)
}

// maxCanonicalDepth bounds the nesting isCanonical follows.
const maxCanonicalDepth = 64

// canonicalAt scans the value at doc[i:] (isCanonical's form) and returns
// the index after it.
func canonicalAt(doc []byte, i, depth int) (int, bool) {
	if i >= len(doc) || depth > maxCanonicalDepth {
		return i, false
	}
	switch c := doc[i]; {
	case c == '{':
		i++
		if i < len(doc) && doc[i] == '}' {
			return i + 1, true
		}
		var prev []byte
		for n := 0; ; n++ {
			j, ok := plainString(doc, i)
			if !ok {
				return i, false
			}
			key := doc[i+1 : j-1]
			if n > 0 && bytes.Compare(prev, key) >= 0 {
				return i, false
			}
			prev = key
			if j >= len(doc) || doc[j] != ':' {
				return j, false
			}
			if i, ok = canonicalAt(doc, j+1, depth+1); !ok || i >= len(doc) {
				return i, false
			}
			switch doc[i] {
			case ',':
				i++
			case '}':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '[':
		i++
		if i < len(doc) && doc[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = canonicalAt(doc, i, depth+1); !ok || i >= len(doc) {
				return i, false
			}
			switch doc[i] {
			case ',':
				i++
			case ']':
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == '"':
		return plainString(doc, i)
	case c == 't':
		return literal(doc, i, "true")
	case c == 'f':
		return literal(doc, i, "false")
	case c == 'n':
		return literal(doc, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return number(doc, i)
	}
	return i, false
}

// plainString scans the string at doc[i:] when it is printable ASCII
// without an escape, and returns the index after its closing quote.
func plainString(doc []byte, i int) (int, bool) {
	if i >= len(doc) || doc[i] != '"' {
		return i, false
	}
	for j := i + 1; j < len(doc); j++ {
		switch c := doc[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return j, false
		}
	}
	return len(doc), false
}

// literal scans lit at doc[i:].
func literal(doc []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(doc[i:], []byte(lit)) {
		return i, false
	}
	return i + len(lit), true
}

// number scans a JSON number at doc[i:]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func number(doc []byte, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(doc) && '0' <= doc[i] && doc[i] <= '9' {
			i++
		}
		return i
	}
	if doc[i] == '-' {
		i++
	}
	switch {
	case i < len(doc) && doc[i] == '0':
		i++
	case i < len(doc) && '1' <= doc[i] && doc[i] <= '9':
		i = digits(i)
	default:
		return i, false
	}
	if i < len(doc) && doc[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(doc) && (doc[i] == 'e' || doc[i] == 'E') {
		i++
		if i < len(doc) && (doc[i] == '+' || doc[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)           // cannot fail for a string
	buf.Truncate(buf.Len() - 1) // Encode appends a newline
}

// PayloadHash returns the hex sha256 of a tool call: the tool name, a newline,
// and the canonical JSON of its arguments. args must already be canonical;
// use HashCall to canonicalize and hash in one step.
func PayloadHash(tool string, canonicalArgs []byte) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{'\n'})
	h.Write(canonicalArgs)
	return hex.EncodeToString(h.Sum(nil))
}

// PinnedHash returns the payload hash of a call to a tool whose definition
// is pinned with it (a tool an MCP server defines): the hex sha256 of the
// tool name, a newline, the canonical JSON of the arguments, a newline and
// the definition's own digest. Canonical JSON holds no raw newline, so the
// three parts cannot be confused. An approval bound to this hash binds
// the definition that was shown: when the server changes the tool, the
// hash it has now is another, and the call is refused (ErrToolChanged).
func PinnedHash(tool string, canonicalArgs []byte, definition string) string {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{'\n'})
	h.Write(canonicalArgs)
	h.Write([]byte{'\n'})
	h.Write([]byte(definition))
	return hex.EncodeToString(h.Sum(nil))
}

// HashCall canonicalizes args and returns them with the payload hash.
// Empty args count as {}.
func HashCall(tool string, args []byte) (json.RawMessage, string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	c, err := Canonicalize(args)
	if err != nil {
		return nil, "", err
	}
	return c, PayloadHash(tool, c), nil
}

// BatchHash returns the payload hash of a batch: the hex sha256 of the
// calls' hashes, in order, one per line. A batch of one call has that call's
// own hash, so a plain approval and a batch of one agree.
func BatchHash(calls []Call) string {
	if len(calls) == 1 {
		return calls[0].PayloadSHA256
	}
	h := sha256.New()
	for _, c := range calls {
		h.Write([]byte(c.PayloadSHA256))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ShortHash is the first 12 hex digits of a hash, for display.
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
