package feishu

import (
	"context"
	"net/http"

	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkcardkit "github.com/larksuite/oapi-sdk-go/v3/service/cardkit/v1"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

// sdk is the part of the Lark SDK the channel calls: messages (im/v1),
// CardKit (cardkit/v1) and plain requests, on one larkcore.Config built the
// way lark.NewClient builds its own (self-built app, token cache, logger,
// serializer, HTTP client). The SDK's root package is not imported: its
// Client brings every service of the SDK into the build (143 packages of
// the 614 `go list -deps ./cmd/bot` counted with it).
type sdk struct {
	config  *larkcore.Config
	im      *larkim.V1
	cardkit *larkcardkit.V1
}

// newSDK is lark.NewClient(appID, appSecret, WithOpenBaseUrl(baseURL),
// WithHttpClient(hc), WithLogger(logger), WithLogLevel(Info)) for the two
// services the channel uses.
func newSDK(appID, appSecret, baseURL string, hc *http.Client, logger larkcore.Logger) *sdk {
	config := &larkcore.Config{
		BaseUrl:          baseURL,
		AppId:            appID,
		AppSecret:        appSecret,
		EnableTokenCache: true,
		AppType:          larkcore.AppTypeSelfBuilt,
		HttpClient:       hc,
		Logger:           logger,
		LogLevel:         larkcore.LogLevelInfo,
	}
	larkcore.NewLogger(config)
	larkcore.NewCache(config)
	larkcore.NewSerialization(config)
	larkcore.NewHttpClient(config)
	config.Logger.Info(context.Background(), "client ready") // as lark.NewClient says it
	return &sdk{config: config, im: larkim.New(config), cardkit: larkcardkit.New(config)}
}

// Get is a GET of an OpenAPI path with the tenant token (lark.Client.Get).
func (s *sdk) Get(ctx context.Context, path string, options ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, error) {
	return larkcore.Request(ctx, &larkcore.ApiReq{
		HttpMethod:                http.MethodGet,
		ApiPath:                   path,
		SupportedAccessTokenTypes: []larkcore.AccessTokenType{larkcore.AccessTokenTypeTenant},
	}, s.config, options...)
}
