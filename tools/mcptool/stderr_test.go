package mcptool

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestProbeShowsTheServersStderr: a stdio server that writes its reason to
// stderr and exits before the handshake is reported with that reason (its
// last lines, the server's secrets hidden), not only the SDK's "client is
// closing: EOF". Before, Probe said "MCP server fs: connecting to sh:
// calling "initialize": client is closing: EOF".
func TestProbeShowsTheServersStderr(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	script := `for i in 1 2 3 4 5 6 7; do echo "starting $i" >&2; done
echo "Error: None of the specified directories are accessible (token $FS_TOKEN)" >&2
exit 1`
	c := ServerConfig{Name: "fs", Command: "sh", Args: []string{"-c", script}, Env: []string{"FS_TOKEN"}}
	getenv := env{"PATH": "/usr/bin:/bin", "FS_TOKEN": childSecret}.get
	_, err := Probe(context.Background(), c, Options{Getenv: getenv})
	if err == nil {
		t.Fatal("the probe of a server that exits succeeded")
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"MCP server fs", "the server's stderr:", "None of the specified directories are accessible", "starting 7"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, childSecret) {
		t.Errorf("the error shows the server's secret: %s", msg)
	}
	if strings.Contains(msg, "starting 1 ") || strings.Contains(msg, "starting 2") {
		t.Errorf("the error holds more than the last lines: %s", msg)
	}
}
