package mcptool

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxResult is how much of a result the model is given.
const maxResult = 64 << 10

// resultText turns a tool result into the text the model reads: text
// blocks as they are; images, audio and resources as a short note (the
// model gets no bytes); the structured content as compact JSON when no
// text block already says the same. The whole is cut at maxResult.
func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, contentText(c))
	}
	if r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil && !sameJSON(parts, b) {
			parts = append(parts, string(b))
		}
	}
	s := strings.ToValidUTF8(strings.Join(parts, "\n"), "\uFFFD")
	if len(s) > maxResult {
		s = cutUTF8(s, maxResult) + fmt.Sprintf("\n[result cut at %d bytes]", maxResult)
	}
	return s
}

// sameJSON reports whether one of the text parts is the JSON document b
// (a typed Go tool sends its structured output as text too).
func sameJSON(parts []string, b []byte) bool {
	var want any
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	wb, _ := json.Marshal(want)
	for _, p := range parts {
		var got any
		if json.Unmarshal([]byte(p), &got) == nil {
			if gb, _ := json.Marshal(got); string(gb) == string(wb) {
				return true
			}
		}
	}
	return false
}

// contentText is one content block as text.
func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *mcp.ResourceLink:
		size := "size unknown"
		if c.Size != nil {
			size = fmt.Sprintf("%d bytes", *c.Size)
		}
		return fmt.Sprintf("[resource %s %s, %s]", c.URI, orUnknown(c.MIMEType), size)
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return "[resource]"
		}
		n := len(c.Resource.Text)
		if c.Resource.Blob != nil {
			n = len(c.Resource.Blob)
		}
		return fmt.Sprintf("[resource %s %s, %d bytes]", c.Resource.URI, orUnknown(c.Resource.MIMEType), n)
	case nil:
		return ""
	default:
		b, _ := json.Marshal(c)
		return fmt.Sprintf("[content %s]", cutUTF8(string(b), 200))
	}
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
