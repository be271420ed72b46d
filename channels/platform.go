package channels

// PlatformMetrics counts what a chat platform's API answers a channel
// (Feishu, DingTalk): every call with the platform's code, the calls the
// platform throttled, the retries, and the messages that could not be
// delivered after them. cmd/bot's metrics implement it (the series
// hitlbot_platform_*); a channel given none counts nothing
// (NoPlatformMetrics).
type PlatformMetrics interface {
	// Request counts one call of api (e.g. "create", "patch", "cardkit
	// content") that the platform answered code: "0" for success, the
	// platform's error code, "http_<status>" when the body had none, or
	// "transport" when no answer came.
	Request(platform, api, code string)
	// Throttled counts a call the platform refused for a rate limit.
	Throttled(platform, api string)
	// Retried counts a retry of a call that failed or was throttled.
	Retried(platform, api string)
	// DeliveryFailed counts a message (or card update) given up on: the
	// platform kept refusing it, or refused it for good.
	DeliveryFailed(platform, api string)
}

// NoPlatformMetrics counts nothing.
type NoPlatformMetrics struct{}

// Request implements PlatformMetrics.
func (NoPlatformMetrics) Request(platform, api, code string) {}

// Throttled implements PlatformMetrics.
func (NoPlatformMetrics) Throttled(platform, api string) {}

// Retried implements PlatformMetrics.
func (NoPlatformMetrics) Retried(platform, api string) {}

// DeliveryFailed implements PlatformMetrics.
func (NoPlatformMetrics) DeliveryFailed(platform, api string) {}
