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
	"strings"
)

// Canonicalize returns the canonical form of a JSON document: object keys
// sorted (by their UTF-8 bytes), no insignificant white space, numbers kept
// exactly as written, strings re-encoded without HTML escaping. Duplicate
// object keys are an error, because two parsers could read them differently.
func Canonicalize(doc []byte) (json.RawMessage, error) {
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
	if strings.TrimSpace(string(args)) == "" {
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
