package feishu

import "context"

// CheckCredentials asks Feishu for a tenant access token with the
// configured app_id and app_secret, as the channel does before its API
// calls, and reports why it got none. It is what `bot doctor` probes; the
// token is kept as the channel's, as after any refresh. The error never
// holds the app secret.
func (c *Channel) CheckCredentials(ctx context.Context) error {
	return c.api.refreshToken(ctx)
}
