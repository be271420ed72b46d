package ws

import (
	"path/filepath"
	"testing"

	"github.com/hitlbot/hitlbot/internal/upstream"
)

// TestSameAsUpstream: these files are the SDK's ws package with the
// changes third_party/README.md names.
func TestSameAsUpstream(t *testing.T) {
	dir := filepath.Join(upstream.Dir(t, "github.com/larksuite/oapi-sdk-go/v3"), "ws")
	files := []string{"client.go", "client_lifecycle.go", "client_message.go", "client_session.go", "client_transport.go",
		"const.go", "error.go", "model.go", "pbbp2.pb.go"}
	upstream.Same(t, dir, ".", files, map[string][][2]string{"client.go": {
		{"\tlark \"github.com/larksuite/oapi-sdk-go/v3\"\n", ""},
		{"\tlarkcard \"github.com/larksuite/oapi-sdk-go/v3/card\"\n", ""},
		{"\tcardHandler             *larkcard.CardActionHandler\n", ""},
		{`"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"`, `dispatcher "github.com/hitlbot/hitlbot/third_party/larkdispatch"`},
		{"lark.FeishuBaseUrl", "feishuBaseURL"},
		{"\ntype Client struct {", `
// feishuBaseURL is lark.FeishuBaseUrl: the one name this package took from
// the SDK's root package, whose import brings every service of the SDK
// into the build (third_party/README.md).
const feishuBaseURL = "https://open.feishu.cn"

type Client struct {`},
	}, "pbbp2.pb.go": {
		{"\t_ \"github.com/gogo/protobuf/gogoproto\"\n", ""},
	}})
}
