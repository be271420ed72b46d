package feishutest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// answer is an answer of the fake: the HTTP status and the body's code,
// msg and data.
type answer struct {
	Status int
	Code   int            `json:"code"`
	Msg    string         `json:"msg"`
	Data   map[string]any `json:"data"`
}

func call(t *testing.T, s *Server, method, path string, body any) answer {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s %s: body is not JSON: %v", method, path, err)
	}
	a.Status = resp.StatusCode
	return a
}

func text(s string) string { b, _ := json.Marshal(map[string]string{"text": s}); return string(b) }

func create(t *testing.T, s *Server, chat, uuid, msgType, content string) answer {
	return call(t, s, "POST", "/open-apis/im/v1/messages?receive_id_type=chat_id",
		map[string]any{"receive_id": chat, "msg_type": msgType, "content": content, "uuid": uuid})
}

// cardOf is a card JSON 2.0 of n markdown components, each of size bytes.
func cardOf(n, size int) string {
	els := make([]any, n)
	for i := range els {
		els[i] = map[string]any{"tag": "markdown", "content": strings.Repeat("x", size)}
	}
	b, _ := json.Marshal(map[string]any{"schema": "2.0", "config": map[string]any{"update_multi": true}, "body": map[string]any{"elements": els}})
	return string(b)
}

// streamingCard creates a CardKit card in streaming mode with element
// "answer" and returns its id.
func streamingCard(t *testing.T, s *Server) string {
	data, _ := json.Marshal(map[string]any{"schema": "2.0", "config": map[string]any{"streaming_mode": true, "update_multi": true},
		"body": map[string]any{"elements": []any{map[string]any{"tag": "markdown", "element_id": "answer", "content": "…"}}}})
	a := call(t, s, "POST", "/open-apis/cardkit/v1/cards", map[string]any{"type": "card_json", "data": string(data)})
	id, _ := a.Data["card_id"].(string)
	if id == "" {
		t.Fatalf("cardkit create: %+v", a)
	}
	return id
}

func content(t *testing.T, s *Server, card, text string, seq int) answer {
	return call(t, s, "PUT", "/open-apis/cardkit/v1/cards/"+card+"/elements/answer/content",
		map[string]any{"content": text, "sequence": seq, "uuid": fmt.Sprint("u", seq)})
}

// ruleCases prove each platform rule the fake keeps bites: run does what
// the platform refuses (after what it accepts) and returns the last
// answer, which must be the refusal in the platform's shape; allowed,
// when set, then does what the platform accepts again and must succeed.
var ruleCases = []struct {
	name       string
	run        func(t *testing.T, s *Server, c *fakeClock) answer
	wantStatus int
	wantCode   int
	wantMsg    string
	allowed    func(t *testing.T, s *Server, c *fakeClock) answer
}{
	{
		name: "uuid repeated within the hour answers the first message and sends nothing",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			first := create(t, s, "oc_a", "u-1", "text", text("one"))
			c.add(59 * time.Minute)
			again := create(t, s, "oc_a", "u-1", "text", text("another text"))
			if again.Data["message_id"] != first.Data["message_id"] {
				t.Errorf("repeat answered %v, want the first message %v", again.Data["message_id"], first.Data["message_id"])
			}
			if n := len(s.Calls()); n != 1 {
				t.Errorf("%d messages sent, want 1", n)
			}
			if d := s.Deduplicated(); len(d) != 1 || !d[0].Deduplicated {
				t.Errorf("deduplicated calls %+v, want the repeat", d)
			}
			return again
		},
		wantStatus: 200,
		allowed: func(t *testing.T, s *Server, c *fakeClock) answer {
			c.add(2 * time.Minute) // over an hour since the first
			a := create(t, s, "oc_a", "u-1", "text", text("later"))
			if n := len(s.Calls()); n != 2 {
				t.Errorf("%d messages sent after the hour, want 2", n)
			}
			return a
		},
	},
	{
		name: "a sixth message to one chat within a second is refused with 230020",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			for i := range ChatQPS {
				if a := create(t, s, "oc_a", fmt.Sprint("u", i), "text", text("x")); a.Code != 0 {
					t.Fatalf("message %d refused: %+v", i, a)
				}
				c.add(100 * time.Millisecond)
			}
			if a := create(t, s, "oc_b", "other", "text", text("x")); a.Code != 0 {
				t.Errorf("another chat refused: %+v", a)
			}
			return create(t, s, "oc_a", "u-6", "text", text("x"))
		},
		wantStatus: 400, wantCode: FrequencyLimitCode, wantMsg: FrequencyLimitMsg,
		allowed: func(t *testing.T, s *Server, c *fakeClock) answer {
			c.add(600 * time.Millisecond)
			return create(t, s, "oc_a", "u-7", "text", text("x"))
		},
	},
	{
		name: "replies count towards the chat of the message they answer",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			s.LearnMessage("om_user", "oc_a")
			for i := range ChatQPS - 1 {
				create(t, s, "oc_a", fmt.Sprint("u", i), "text", text("x"))
			}
			if a := call(t, s, "POST", "/open-apis/im/v1/messages/om_user/reply", map[string]any{"msg_type": "text", "content": text("r"), "uuid": "r1"}); a.Code != 0 {
				t.Fatalf("fifth: %+v", a)
			}
			return call(t, s, "POST", "/open-apis/im/v1/messages/om_user/reply", map[string]any{"msg_type": "text", "content": text("r"), "uuid": "r2"})
		},
		wantStatus: 400, wantCode: FrequencyLimitCode, wantMsg: FrequencyLimitMsg,
	},
	{
		name: "a sixth patch of one message within a second is refused with 230020",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			card := cardOf(1, 10)
			id, _ := create(t, s, "oc_a", "c", "interactive", card).Data["message_id"].(string)
			var a answer
			for range MessagePatchQPS + 1 {
				a = call(t, s, "PATCH", "/open-apis/im/v1/messages/"+id, map[string]any{"content": card})
			}
			return a
		},
		wantStatus: 400, wantCode: FrequencyLimitCode, wantMsg: FrequencyLimitMsg,
		allowed: func(t *testing.T, s *Server, c *fakeClock) answer {
			c.add(time.Second)
			id := s.Calls()[0].Sent
			return call(t, s, "PATCH", "/open-apis/im/v1/messages/"+id, map[string]any{"content": cardOf(1, 10)})
		},
	},
	{
		name: "a card of more than 200 components is refused with 230099 / 11310",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			if a := create(t, s, "oc_a", "ok", "interactive", cardOf(MaxCardComponents, 1)); a.Code != 0 {
				t.Fatalf("a card of %d components refused: %+v", MaxCardComponents, a)
			}
			c.add(time.Second)
			return create(t, s, "oc_a", "big", "interactive", cardOf(MaxCardComponents+1, 1))
		},
		wantStatus: 400, wantCode: CardRefusedCode, wantMsg: "ErrCode: 11310",
	},
	{
		name: "a card message whose request body is over 30 KB is refused with 230099",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			// Escaping makes the body larger than the card: quotes count twice.
			// A card of 25 KB whose 4096 escaped quotes take 4 bytes each
			// in the request body: 33 KB.
			card := cardOf(1, 25*1024)
			card = strings.Replace(card, strings.Repeat("x", 8*1024), strings.Repeat(`\"`, 4*1024), 1)
			if len(card) > MaxBodyBytes {
				t.Fatalf("the card itself is %d bytes", len(card))
			}
			return create(t, s, "oc_a", "big", "interactive", card)
		},
		wantStatus: 400, wantCode: CardRefusedCode, wantMsg: "over 30720",
	},
	{
		name: "a patch over 200 components is refused too",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			id, _ := create(t, s, "oc_a", "c", "interactive", cardOf(1, 1)).Data["message_id"].(string)
			return call(t, s, "PATCH", "/open-apis/im/v1/messages/"+id, map[string]any{"content": cardOf(MaxCardComponents+1, 1)})
		},
		wantStatus: 400, wantCode: CardRefusedCode, wantMsg: "ErrCode: 11310",
	},
	{
		name: "CardKit streaming closes itself 10 minutes after it was opened: 200850",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			id := streamingCard(t, s)
			c.add(CardKitStreamingFor - time.Second)
			if a := content(t, s, id, "a", 1); a.Code != 0 {
				t.Fatalf("update within the window: %+v", a)
			}
			c.add(time.Second)
			return content(t, s, id, "ab", 2)
		},
		wantStatus: 400, wantCode: CardKitStreamingTimeoutCode, wantMsg: "streaming mode closed",
	},
	{
		name: "CardKit card over 30 KB after an update: 200860",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			id := streamingCard(t, s)
			return content(t, s, id, strings.Repeat("x", CardKitMaxCardBytes), 1)
		},
		wantStatus: 400, wantCode: CardKitCardTooLargeCode, wantMsg: "over 30720",
	},
	{
		name: "CardKit content over 100,000 characters is invalid",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			id := streamingCard(t, s)
			return content(t, s, id, strings.Repeat("x", CardKitMaxContentChars+1), 1)
		},
		wantStatus: 400, wantCode: FieldValidationCode, wantMsg: "1 to 100000",
	},
	{
		name: "CardKit empty content is invalid",
		run: func(t *testing.T, s *Server, c *fakeClock) answer {
			return content(t, s, streamingCard(t, s), "", 1)
		},
		wantStatus: 400, wantCode: FieldValidationCode, wantMsg: "1 to 100000",
	},
}

func TestRulesBite(t *testing.T) {
	for _, tc := range ruleCases {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			defer s.Close()
			c := &fakeClock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
			s.SetClock(c.now)
			a := tc.run(t, s, c)
			if a.Status != tc.wantStatus || a.Code != tc.wantCode || !strings.Contains(a.Msg, tc.wantMsg) {
				t.Errorf("answer HTTP %d code %d msg %q, want HTTP %d code %d msg containing %q", a.Status, a.Code, a.Msg, tc.wantStatus, tc.wantCode, tc.wantMsg)
			}
			if tc.allowed != nil {
				if a := tc.allowed(t, s, c); a.Status != 200 || a.Code != 0 {
					t.Errorf("what the platform accepts again was refused: %+v", a)
				}
			}
		})
	}
}
