package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeAPIRoutes checks the API's routes on the server's own mux,
// beside the web chat's catch-all "/": a wrong method is 405 with Allow
// (not the web chat's 404), and a body of invalid UTF-8 is 400.
func TestServeAPIRoutes(t *testing.T) {
	s := serve(t, "-data", t.TempDir())
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/agent/chat", "POST"},
		{"DELETE", "/api/approvals", "GET, HEAD"},
		{"GET", "/api/approvals/ap_00000000_00000000000000000000000000000000/decision", "POST"},
		{"PUT", "/api/approvals/ap_00000000_00000000000000000000000000000000/cancel", "POST"},
	} {
		req, _ := http.NewRequest(c.method, s.base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow || !strings.Contains(string(b), "method_not_allowed") {
			t.Errorf("%s %s: %d, Allow %q: %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	}
	resp, err := http.Post(s.base+"/agent/chat", "application/json", strings.NewReader("{\"message\":\"list tasks \xff\"}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "UTF-8") {
		t.Errorf("invalid UTF-8: %d %s", resp.StatusCode, b)
	}
	// The web chat still answers its own paths.
	if code, body := get(t, s.base+"/"); code != http.StatusOK || !strings.Contains(strings.ToLower(body), "<html") {
		t.Errorf("GET /: %d", code)
	}
}
