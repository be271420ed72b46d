package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/metrics"
)

// The platform series count every answer by code, the throttles, the
// retries and the delivery failures; PlatformWarnings names a platform
// whose last PlatformRefusing calls all failed, and forgets it at its
// next success.
func TestPlatformMetrics(t *testing.T) {
	m := metrics.New("test")
	m.Request("feishu", "create", "0")
	for range metrics.PlatformRefusing - 1 {
		m.Request("feishu", "create", "230020")
		m.Throttled("feishu", "create")
		m.Retried("feishu", "create")
	}
	if w := m.PlatformWarnings(); len(w) != 0 {
		t.Fatalf("warned after %d failures: %q", metrics.PlatformRefusing-1, w)
	}
	m.Request("feishu", "patch", "230099")
	m.DeliveryFailed("feishu", "patch")
	w := m.PlatformWarnings()
	if len(w) != 1 || !strings.Contains(w[0], "feishu keeps refusing") || !strings.Contains(w[0], "code 230099") {
		t.Fatalf("warnings %q, want feishu's with its last code", w)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`hitlbot_platform_requests_total{api="create",code="0",platform="feishu"} 1`,
		`hitlbot_platform_requests_total{api="create",code="230020",platform="feishu"} 4`,
		`hitlbot_platform_throttled_total{api="create",platform="feishu"} 4`,
		`hitlbot_platform_retries_total{api="create",platform="feishu"} 4`,
		`hitlbot_platform_delivery_failures_total{api="patch",platform="feishu"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	m.Request("feishu", "create", "0")
	if w := m.PlatformWarnings(); len(w) != 0 {
		t.Fatalf("still warned after a success: %q", w)
	}
	var nilM *metrics.Metrics
	nilM.Request("feishu", "create", "1")
	if nilM.PlatformWarnings() != nil {
		t.Fatal("a nil Metrics warned")
	}
}
