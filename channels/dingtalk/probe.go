package dingtalk

import "context"

// CheckCredentials asks DingTalk for an app access token with the
// configured client_id and client_secret (the OpenAPI oauth2 call the
// channel makes before its card and robot calls) and reports why it got
// none. It is what `bot doctor` probes. The error never holds the secret.
func (c *Channel) CheckCredentials(ctx context.Context) error {
	_, err := c.api.accessToken(ctx)
	return err
}
