package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/words"
)

// readJSON reads a request body of at most MaxMessageBytes into v. The body
// must be valid UTF-8 and hold no \u escape of a lone UTF-16 surrogate,
// checked before decoding: encoding/json would turn either into U+FFFD
// silently, and a decision or message would then say something else than
// what was sent. The body must be one JSON object and nothing else (space
// aside). shape names the expected object in the error message. An empty
// body is an error when required, else it leaves v as it is.
func (a *inbound) readJSON(w http.ResponseWriter, r *http.Request, v any, shape string, required bool) *apiError {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxMessageBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fail(CodeInvalidRequest, words.APIBodyTooLarge, shape)
		}
		return fail(CodeInvalidRequest, words.APIBodyUnreadable)
	}
	if !required && len(bytes.Trim(b, jsonSpace)) == 0 {
		return nil
	}
	if !utf8.Valid(b) {
		return fail(CodeInvalidRequest, words.APIBodyBadUTF8)
	}
	if loneSurrogate(b) {
		return fail(CodeInvalidRequest, words.APIBodySurrogate)
	}
	if t := bytes.TrimLeft(b, jsonSpace); len(t) > 0 && t[0] != '{' {
		return fail(CodeInvalidRequest, words.APIBodyNotObject, shape)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err, shape)
	}
	if len(bytes.Trim(b[dec.InputOffset():], jsonSpace)) != 0 {
		return fail(CodeInvalidRequest, words.APIBodyTrailing)
	}
	return nil
}

// jsonSpace is the white space JSON allows between tokens.
const jsonSpace = " \t\r\n"

// loneSurrogate reports whether JSON text b holds a \uXXXX escape of a
// surrogate (D800–DFFF) that is not a high one followed at once by a low
// one. Escapes occur only inside strings; text that is not JSON at all
// is left to the decoder.
func loneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 >= len(b) || b[i+1] != 'u' {
			i++ // an escaped character: skip it (it may be a backslash)
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			i++
			continue
		}
		switch {
		case 0xDC00 <= r && r <= 0xDFFF:
			return true // a low surrogate without a high one
		case 0xD800 <= r && r <= 0xDBFF:
			if i+12 > len(b) || b[i+6] != '\\' || b[i+7] != 'u' {
				return true
			}
			lo, ok := hex4(b, i+8)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

// hex4 parses the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// methodNotAllowed answers 405 with the route's methods in Allow.
func (a *inbound) methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		a.writeError(w, r, fail(CodeMethodNotAllowed, words.APIMethodNotAllowed, r.Method, allow))
	}
}
