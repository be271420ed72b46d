package dispatcher

import (
	"path/filepath"
	"testing"

	"github.com/hitlbot/hitlbot/internal/upstream"
)

// TestSameAsUpstream: these files are the SDK's event/dispatcher package,
// unchanged (the package keeps only the files hitlbot's events need).
func TestSameAsUpstream(t *testing.T) {
	dir := filepath.Join(upstream.Dir(t, "github.com/larksuite/oapi-sdk-go/v3"), "event", "dispatcher")
	upstream.Same(t, dir, ".", []string{"dispatcher.go", "appticket_handler.go", "custom_appticket_handler.go",
		"callback_dispatch.go", "im_v1_event_dispatch.go"}, nil)
}
