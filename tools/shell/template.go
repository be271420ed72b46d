package shell

import "github.com/hitlbot/hitlbot/tools/internal/argtmpl"

// template is one argv element with {{.name}} placeholders (see argtmpl).
// A rendered template is always exactly one argv element: values are
// inserted as they are, never split or interpreted.
type template = argtmpl.Template

// parseTemplate parses an argv element.
func parseTemplate(s string) (template, error) { return argtmpl.Parse(s) }
