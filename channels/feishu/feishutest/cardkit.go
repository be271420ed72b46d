package feishutest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"
)

// CardKit (card entities and streaming text), as the fake enforces it
// (docs: cardkit-v1/streaming-updates-openapi-overview; the codes below are
// the fake's, not confirmed against Feishu):
//   - POST /open-apis/cardkit/v1/cards {"type":"card_json","data":"<card JSON 2.0>"} -> data.card_id
//   - a message whose content is {"type":"card","data":{"card_id":…}} sends it; a second send is refused
//   - PUT …/cards/:id/elements/:eid/content {"content","sequence","uuid"}: the element must exist and
//     the card be in streaming mode
//   - PATCH …/cards/:id/settings {"settings":"{\"config\":{\"streaming_mode\":false}}","sequence","uuid"}
//   - every content and settings call carries a sequence greater than the card's last one
//   - at most CardKitOpsPerSecond calls per card in any second: more get HTTP 429 / 99991400
//   - streaming mode closes itself CardKitStreamingFor after it was turned on: a content update
//     then answers 200850; an update that makes the card larger than CardKitMaxCardBytes answers
//     200860; a content of 0 or more than CardKitMaxContentChars characters is invalid (rules.go)
//
// Every refusal is recorded (CardKitRefusals), so a test proves the bot
// kept the rules by finding none.
const (
	CardKitOpsPerSecond     = 10
	CardKitSequenceCode     = 300317 // sequence not greater than the last one
	CardKitStreamingOffCode = 300309 // content update while streaming mode is off
	CardKitNotFoundCode     = 300301 // unknown card or element
)

// CardEntity is a card entity the fake holds.
type CardEntity struct {
	ID string
	// Streaming is the card's streaming_mode now.
	Streaming bool
	// Elements are the element ids of the card.
	Elements map[string]bool
	// Initial is the text of each element when the card was created.
	Initial map[string]string
	// Contents are the texts of the content updates, in order.
	Contents []string
	// Settings are the settings calls' settings, in order.
	Settings []string
	// Sent counts the messages that sent the card.
	Sent int
	// Seq is the last sequence accepted.
	Seq int
	// Closed is when streaming mode was switched off (zero while on).
	Closed time.Time
	// Opened is when streaming mode was last turned on.
	Opened time.Time
	// TimedOut says streaming mode closed itself (CardKitStreamingFor).
	TimedOut bool
	ops      []time.Time
	card     map[string]any // the card JSON, its elements' contents kept current
}

type cardkit struct {
	now      func() time.Time // the rate's clock (SetCardKitClock); nil: the wall clock
	entities map[string]*CardEntity
	order    []string
	refusals []string
	next     int
}

func (s *Server) routeCardKit(mux *http.ServeMux) {
	mux.HandleFunc("POST /open-apis/cardkit/v1/cards", s.authed(s.kitCreate))
	mux.HandleFunc("PUT /open-apis/cardkit/v1/cards/{id}/elements/{eid}/content", s.authed(s.kitContent))
	mux.HandleFunc("PATCH /open-apis/cardkit/v1/cards/{id}/settings", s.authed(s.kitSettings))
}

// SetCardKitClock makes now the clock of the per-card rate (a test that
// proves the limit holds the clock still); nil is the wall clock.
func (s *Server) SetCardKitClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kit.now = now
}

// CardEntities returns copies of the card entities, in creation order.
func (s *Server) CardEntities() []CardEntity {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CardEntity
	for _, id := range s.kit.order {
		e := *s.kit.entities[id]
		e.Contents = append([]string(nil), e.Contents...)
		e.Settings = append([]string(nil), e.Settings...)
		e.ops, e.card = nil, nil
		out = append(out, e)
	}
	return out
}

// CardKitRefusals returns why the fake refused CardKit calls (and sends
// of card entities), in order.
func (s *Server) CardKitRefusals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.kit.refusals...)
}

func (s *Server) kitRefuse(w http.ResponseWriter, status, code int, msg string) {
	s.kit.refusals = append(s.kit.refusals, msg)
	writeJSON(w, status, map[string]any{"code": code, "msg": msg})
}

func (s *Server) kitCreate(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	raw, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := json.Unmarshal(raw, &b); err != nil || b.Type != "card_json" {
		s.kitRefuse(w, 400, 300300, fmt.Sprintf("bad body (type %q): %v", b.Type, err))
		return
	}
	var whole map[string]any
	_ = json.Unmarshal([]byte(b.Data), &whole)
	if len(b.Data) > CardKitMaxCardBytes {
		s.kitRefuse(w, 400, CardKitCardTooLargeCode, fmt.Sprintf("card is %d bytes, over %d", len(b.Data), CardKitMaxCardBytes))
		return
	}
	var card struct {
		Schema string `json:"schema"`
		Config struct {
			StreamingMode bool `json:"streaming_mode"`
		} `json:"config"`
		Body struct {
			Elements []map[string]any `json:"elements"`
		} `json:"body"`
	}
	if err := json.Unmarshal([]byte(b.Data), &card); err != nil || card.Schema != "2.0" {
		s.kitRefuse(w, 400, 300300, fmt.Sprintf("data is not a card JSON 2.0 (schema %q): %v", card.Schema, err))
		return
	}
	if err := CheckCard(b.Data); err != nil {
		s.kitRefuse(w, 400, CardRefusedCode, "card refused: "+err.Error())
		return
	}
	s.kit.next++
	e := &CardEntity{ID: fmt.Sprintf("card_fake_%d", s.kit.next), Streaming: card.Config.StreamingMode,
		Elements: map[string]bool{}, Initial: map[string]string{}, card: whole}
	if e.Streaming {
		e.Opened = s.kitNowLocked()
	}
	for _, el := range card.Body.Elements {
		if id, _ := el["element_id"].(string); id != "" {
			e.Elements[id] = true
			e.Initial[id], _ = el["content"].(string)
		}
	}
	if s.kit.entities == nil {
		s.kit.entities = map[string]*CardEntity{}
	}
	s.kit.entities[e.ID] = e
	s.kit.order = append(s.kit.order, e.ID)
	writeJSON(w, 200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{"card_id": e.ID}})
}

// kitOp checks a content or settings call on card id: known, sequence
// increasing, within the rate; it answers the refusal and returns nil.
func (s *Server) kitOpLocked(w http.ResponseWriter, id string, seq int) *CardEntity {
	e := s.kit.entities[id]
	if e == nil {
		s.kitRefuse(w, 400, CardKitNotFoundCode, "unknown card "+id)
		return nil
	}
	now := s.kitNowLocked()
	if e.Streaming && now.Sub(e.Opened) >= CardKitStreamingFor {
		// Streaming mode closes itself 10 minutes after it was turned on.
		e.Streaming, e.TimedOut, e.Closed = false, true, now
	}
	recent := e.ops[:0]
	for _, t := range e.ops {
		if now.Sub(t) < time.Second {
			recent = append(recent, t)
		}
	}
	e.ops = recent
	if len(e.ops) >= CardKitOpsPerSecond {
		w.Header().Set("x-ogw-ratelimit-reset", "1")
		s.kitRefuse(w, 429, 99991400, fmt.Sprintf("card %s: more than %d operations in a second", id, CardKitOpsPerSecond))
		return nil
	}
	e.ops = append(e.ops, now)
	if seq <= e.Seq {
		s.kitRefuse(w, 400, CardKitSequenceCode, fmt.Sprintf("card %s: sequence %d is not greater than %d", id, seq, e.Seq))
		return nil
	}
	e.Seq = seq
	return e
}

func (s *Server) kitContent(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Content  string `json:"content"`
		Sequence int    `json:"sequence"`
		UUID     string `json:"uuid"`
	}
	raw, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := json.Unmarshal(raw, &b); err != nil {
		s.kitRefuse(w, 400, 300300, "bad body: "+err.Error())
		return
	}
	e := s.kitOpLocked(w, r.PathValue("id"), b.Sequence)
	if e == nil {
		return
	}
	chars := utf8.RuneCountInString(b.Content)
	switch eid := r.PathValue("eid"); {
	case !e.Elements[eid]:
		s.kitRefuse(w, 400, CardKitNotFoundCode, fmt.Sprintf("card %s has no element %q", e.ID, eid))
	case chars < 1 || chars > CardKitMaxContentChars:
		s.kitRefuse(w, 400, FieldValidationCode, fmt.Sprintf("content has %d characters: 1 to %d", chars, CardKitMaxContentChars))
	case e.TimedOut && !e.Streaming:
		s.kitRefuse(w, 400, CardKitStreamingTimeoutCode, fmt.Sprintf("card %s: streaming mode closed %v after it was opened", e.ID, CardKitStreamingFor))
	case !e.Streaming:
		s.kitRefuse(w, 400, CardKitStreamingOffCode, fmt.Sprintf("card %s is not in streaming mode", e.ID))
	case e.sizeWith(eid, b.Content) > CardKitMaxCardBytes:
		s.kitRefuse(w, 400, CardKitCardTooLargeCode, fmt.Sprintf("card %s would be %d bytes, over %d", e.ID, e.sizeWith(eid, b.Content), CardKitMaxCardBytes))
	default:
		e.setContent(eid, b.Content)
		e.Contents = append(e.Contents, b.Content)
		writeJSON(w, 200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{}})
	}
}

func (s *Server) kitSettings(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Settings string `json:"settings"`
		Sequence int    `json:"sequence"`
		UUID     string `json:"uuid"`
	}
	raw, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	var settings struct {
		Config struct {
			StreamingMode *bool `json:"streaming_mode"`
		} `json:"config"`
	}
	if err := json.Unmarshal(raw, &b); err != nil || json.Unmarshal([]byte(b.Settings), &settings) != nil {
		s.kitRefuse(w, 400, 300300, fmt.Sprintf("bad body or settings: %s", raw))
		return
	}
	e := s.kitOpLocked(w, r.PathValue("id"), b.Sequence)
	if e == nil {
		return
	}
	if m := settings.Config.StreamingMode; m != nil {
		if e.Streaming && !*m {
			e.Closed = s.kitNowLocked()
		}
		if !e.Streaming && *m {
			e.Opened, e.TimedOut = s.kitNowLocked(), false
		}
		e.Streaming = *m
	}
	e.Settings = append(e.Settings, b.Settings)
	writeJSON(w, 200, map[string]any{"code": 0, "msg": "success", "data": map[string]any{}})
}

// kitNowLocked is CardKit's clock: SetCardKitClock's, else SetClock's.
func (s *Server) kitNowLocked() time.Time {
	if s.kit.now != nil {
		return s.kit.now()
	}
	return s.nowLocked()
}

// elementsOf returns the body elements of a card JSON.
func elementsOf(card map[string]any) []any {
	body, _ := card["body"].(map[string]any)
	els, _ := body["elements"].([]any)
	return els
}

// sizeWith is the card's size in bytes were element eid's content text.
func (e *CardEntity) sizeWith(eid, text string) int {
	var old any
	for _, el := range elementsOf(e.card) {
		if m, ok := el.(map[string]any); ok && m["element_id"] == eid {
			old, m["content"] = m["content"], text
			b, _ := json.Marshal(e.card)
			m["content"] = old
			return len(b)
		}
	}
	return 0
}

func (e *CardEntity) setContent(eid, text string) {
	for _, el := range elementsOf(e.card) {
		if m, ok := el.(map[string]any); ok && m["element_id"] == eid {
			m["content"] = text
		}
	}
}

// sendEntityLocked checks a message that sends a card entity: known, and
// sent only once. Other contents pass.
func (s *Server) sendEntityLocked(content string) error {
	var m struct {
		Type string `json:"type"`
		Data struct {
			CardID string `json:"card_id"`
		} `json:"data"`
	}
	if json.Unmarshal([]byte(content), &m) != nil || m.Type != "card" {
		return nil
	}
	e := s.kit.entities[m.Data.CardID]
	switch {
	case e == nil:
		err := fmt.Errorf("unknown card entity %q", m.Data.CardID)
		s.kit.refusals = append(s.kit.refusals, err.Error())
		return err
	case e.Sent > 0:
		err := fmt.Errorf("card entity %s was sent already", e.ID)
		s.kit.refusals = append(s.kit.refusals, err.Error())
		return err
	}
	e.Sent++
	return nil
}
