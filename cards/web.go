package cards

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// WebJSON renders v as the JSON object the web chat page draws its
// confirmation dialog and its final state from: the View's own fields
// (see the json tags on View), with times in RFC 3339 UTC and each call's
// arguments as the canonical JSON they were hashed from (compacted, never
// re-ordered or completed). Arguments that are not valid JSON are an error,
// not a card with a hole.
func WebJSON(v View) ([]byte, error) {
	v.ExpiresAt, v.CreatedAt = v.ExpiresAt.UTC(), v.CreatedAt.UTC()
	calls := make([]CallView, len(v.Calls))
	for i, c := range v.Calls {
		if len(c.Args) == 0 {
			c.Args = json.RawMessage("{}")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, c.Args); err != nil {
			return nil, fmt.Errorf("cards.WebJSON: call %d (%s): arguments are not JSON: %w", i, c.Tool, err)
		}
		c.Args = buf.Bytes()
		calls[i] = c
	}
	v.Calls = calls
	return json.Marshal(v)
}
