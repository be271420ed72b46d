package feishutest

import (
	"encoding/json"
	"fmt"
	"time"
)

// The platform's rules the fake keeps, beyond the shapes of its routes.
// Each cites its source; docs/platform-rules.md lists them with how
// hitlbot keeps each one.
const (
	// UUIDWindow: message create and reply requests that carry the same
	// uuid send at most one message within an hour; a repeat sends nothing
	// and answers with the first message ("持有相同 uuid 的请求，在 1 小时内
	// 至多成功发送一条消息": doc server-docs/im-v1/message/create, and
	// …/message/reply, request body field uuid).
	UUIDWindow = time.Hour

	// ChatQPS: at most 5 messages per second to one group (shared by every
	// bot in it), and 5 per second to one person in a 1:1 chat (doc
	// server-docs/im-v1/message/create, "频率限制"). Replies count towards
	// the chat of the message they answer.
	ChatQPS = 5
	// MessagePatchQPS: at most 5 PATCHes per second of one message (doc
	// server-docs/im-v1/message-card/patch, "单条消息更新频率控制为 5 QPS").
	MessagePatchQPS = 5
	// FrequencyLimitCode is the answer past ChatQPS or MessagePatchQPS:
	// HTTP 400, code 230020, "This operation triggers the frequency limit."
	// (the error tables of the two pages above). App-level limits answer
	// HTTP 429 with 99991400 instead (Throttle).
	FrequencyLimitCode = 230020
	// FrequencyLimitMsg is the msg of a FrequencyLimitCode answer.
	FrequencyLimitMsg = "This operation triggers the frequency limit."

	// MaxCardComponents: a card holds at most 200 components (doc
	// feishu-cards/card-json-v2-structure, "卡片中最多可包含 200 个元素");
	// past it Feishu answers 230099 with the card error 11310 in msg
	// (larksuite/openclaw-lark #53).
	MaxCardComponents = 200
	// CardTooManyComponentsErr is the card error code Feishu names in the
	// msg of a 230099 answer for too many components.
	CardTooManyComponentsErr = 11310
	// MaxBodyBytes: a card message's request body is at most 30 KB (doc
	// feishu-cards/card-json-v2-structure, "请求体大小不超过 30 KB"; the
	// message create page: "卡片消息 … 最大不超过 30 KB").
	MaxBodyBytes = 30 * 1024

	// CardKitStreamingFor: streaming mode closes itself 10 minutes after
	// it was turned on; a content update after that answers 200850 (doc
	// cardkit-v1/card-element/content, error table;
	// streaming-updates-openapi-overview).
	CardKitStreamingFor = 10 * time.Minute
	// CardKitStreamingTimeoutCode is the 200850 answer.
	CardKitStreamingTimeoutCode = 200850
	// CardKitMaxCardBytes: a card entity is at most 30 KB; an update that
	// makes it larger answers 200860 (same error table).
	CardKitMaxCardBytes     = 30 * 1024
	CardKitCardTooLargeCode = 200860
	// CardKitMaxContentChars: an element's streamed content is 1 to
	// 100,000 characters (doc cardkit-v1/card-element/content, request
	// body content); outside that the request is invalid (99992402, the
	// platform's "field validation failed").
	CardKitMaxContentChars = 100000
	FieldValidationCode    = 99992402
)

// SetClock makes now the fake's clock for every rule measured in time
// (the uuid hour, the per-second rates, CardKit's streaming window), so a
// test moves time instead of sleeping; nil is the wall clock.
// SetCardKitClock, when set, still overrides it for CardKit.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

func (s *Server) nowLocked() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// window is a sliding one-second window of accepted calls per key.
type window map[string][]time.Time

// allow reports whether one more call for key fits max calls in the
// second before now, and counts it when it does.
func (w window) allow(key string, max int, now time.Time) bool {
	recent := w[key][:0]
	for _, t := range w[key] {
		if now.Sub(t) < time.Second {
			recent = append(recent, t)
		}
	}
	w[key] = recent
	if len(recent) >= max {
		return false
	}
	w[key] = append(recent, now)
	return true
}

// sentMessage is what the fake remembers of a message for uuid
// de-duplication.
type sentMessage struct {
	id, chat string
	at       time.Time
}

// countComponents counts the components of a card JSON 2.0 body (every
// element, container or not, at any depth: elements and columns), or of
// a card JSON 1.0's top-level elements.
func countComponents(content string) int {
	var card struct {
		Elements []any `json:"elements"`
		Body     struct {
			Elements []any `json:"elements"`
		} `json:"body"`
	}
	if json.Unmarshal([]byte(content), &card) != nil {
		return 0
	}
	n := 0
	var walk func(list []any)
	walk = func(list []any) {
		for _, el := range list {
			m, ok := el.(map[string]any)
			if !ok {
				continue
			}
			n++
			for _, k := range []string{"elements", "columns"} {
				if sub, ok := m[k].([]any); ok {
					walk(sub)
				}
			}
		}
	}
	walk(card.Elements)
	walk(card.Body.Elements)
	return n
}

// CheckCardLimits checks an interactive message's request body (raw, as
// sent) and its card content against Feishu's limits: the body at most
// MaxBodyBytes, the card at most MaxCardComponents components. The error
// says which; the fake answers it 230099.
func CheckCardLimits(body []byte, content string) error {
	if len(body) > MaxBodyBytes {
		return fmt.Errorf("request body is %d bytes, over %d", len(body), MaxBodyBytes)
	}
	if n := countComponents(content); n > MaxCardComponents {
		return fmt.Errorf("ErrCode: %d; ErrMsg: card has %d components, over %d", CardTooManyComponentsErr, n, MaxCardComponents)
	}
	return nil
}
