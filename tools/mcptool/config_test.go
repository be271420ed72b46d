package mcptool

import (
	"strings"
	"testing"
)

var validationCases = []struct {
	name string
	c    ServerConfig
	want []string // each must appear in the error; none: valid
}{
	{"stdio ok", ServerConfig{Name: "fs", Command: "npx", Args: []string{"-y", "x"}, Env: []string{"FS_TOKEN"}}, nil},
	{"http ok", ServerConfig{Name: "gh_1", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "GH_AUTH"}}, nil},
	{"bad name", ServerConfig{Name: "Fs-1", Command: "x"}, []string{"tools.mcp.servers[Fs-1].name:"}},
	{"long name", ServerConfig{Name: strings.Repeat("a", 21), Command: "x"}, []string{".name:"}},
	{"neither", ServerConfig{Name: "fs"}, []string{"tools.mcp.servers[fs].command: set command"}},
	{"both", ServerConfig{Name: "fs", Command: "x", URL: "https://a/mcp"}, []string{"servers[fs].url: set either"}},
	{"bad url", ServerConfig{Name: "fs", URL: "ftp://a/b"}, []string{".url: \"ftp://a/b\" is not an http(s) URL"}},
	{"user info", ServerConfig{Name: "fs", URL: "https://u:p@a/b"}, []string{".url: must not hold user info"}},
	{"args with url", ServerConfig{Name: "fs", URL: "https://a/b", Args: []string{"x"}}, []string{".args:"}},
	{"headers with command", ServerConfig{Name: "fs", Command: "x", Headers: map[string]string{"A": "B"}}, []string{".headers: headers are for a url"}},
	{"env value not name", ServerConfig{Name: "fs", Command: "x", Env: []string{"TOKEN=abc"}}, []string{".env[0]: \"TOKEN=abc\" is not an environment variable name"}},
	{"header value given", ServerConfig{Name: "fs", URL: "https://a/b", Headers: map[string]string{"Authorization": "Bearer xyz"}}, []string{".headers.Authorization: \"Bearer xyz\" is not an environment variable name"}},
	{"header env empty", ServerConfig{Name: "fs", URL: "https://a/b", Headers: map[string]string{"Authorization": "EMPTY_VAR"}}, []string{".headers.Authorization: environment variable EMPTY_VAR is empty or not set"}},
	{"bad glob", ServerConfig{Name: "fs", Command: "x", Tools: ToolFilter{Deny: []string{"[a"}}}, []string{".tools: \"[a\" is not a valid glob"}},
	{"negative timeouts", ServerConfig{Name: "fs", Command: "x", CallTimeout: -1, StartTimeout: -1}, []string{".call_timeout:", ".start_timeout:"}},
}

func TestValidate(t *testing.T) {
	getenv := env{"GH_AUTH": "Bearer secret-value-1"}.get
	for _, tt := range validationCases {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate(getenv)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want errors %q, got none", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret-value-1") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

func TestValidateServersUniqueNames(t *testing.T) {
	err := ValidateServers([]ServerConfig{{Name: "fs", Command: "a"}, {Name: "fs", Command: "b"}}, nil)
	if err == nil || !strings.Contains(err.Error(), `tools.mcp.servers[1].name: "fs" is used by another server`) {
		t.Fatalf("got %v", err)
	}
	if err := ValidateServers([]ServerConfig{{Name: "a", Command: "a"}, {Name: "b", Command: "b"}}, nil); err != nil {
		t.Fatal(err)
	}
}

var filterCases = []struct {
	f    ToolFilter
	name string
	want bool
}{
	{ToolFilter{}, "write_file", true},
	{ToolFilter{Allow: []string{"read_*"}}, "read_file", true},
	{ToolFilter{Allow: []string{"read_*"}}, "write_file", false},
	{ToolFilter{Deny: []string{"write_*"}}, "write_file", false},
	{ToolFilter{Deny: []string{"write_*"}}, "read_file", true},
	{ToolFilter{Allow: []string{"*"}, Deny: []string{"read_file"}}, "read_file", false}, // deny wins
}

func TestToolFilter(t *testing.T) {
	for _, tt := range filterCases {
		if got := tt.f.Offers(tt.name); got != tt.want {
			t.Errorf("%+v.Offers(%q) = %v, want %v", tt.f, tt.name, got, tt.want)
		}
	}
}
