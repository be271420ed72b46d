package dingtalk

import (
	"fmt"
	"log/slog"

	sdklogger "github.com/open-dingtalk/dingtalk-stream-sdk-go/logger"
)

// SetSDKLogger routes the Stream SDK's own logs (connects, reconnects,
// frame errors) to l at Debug (SDK debug and info) or Warn / Error. The
// SDK's logger is process-global and not safe to change while a client
// runs: call this once at start-up, before any channel starts. Without it
// the SDK logs nothing.
func SetSDKLogger(l *slog.Logger) {
	if l == nil {
		return
	}
	sdklogger.SetLogger(sdkLog{l.With("component", "dingtalk-sdk")})
}

type sdkLog struct{ l *slog.Logger }

func (s sdkLog) Debugf(format string, args ...any)   { s.l.Debug(fmt.Sprintf(format, args...)) }
func (s sdkLog) Infof(format string, args ...any)    { s.l.Debug(fmt.Sprintf(format, args...)) }
func (s sdkLog) Warningf(format string, args ...any) { s.l.Warn(fmt.Sprintf(format, args...)) }
func (s sdkLog) Errorf(format string, args ...any)   { s.l.Error(fmt.Sprintf(format, args...)) }
func (s sdkLog) Fatalf(format string, args ...any)   { s.l.Error(fmt.Sprintf(format, args...)) }
