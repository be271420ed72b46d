package dingtalktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// AI card streaming, as the fake enforces it (the rules of the notes in
// shared/reference, cards-forms-privacy-streaming.md B3/B4; the error codes
// are the fake's, unconfirmed against DingTalk):
//   - createAndDeliver: a unique outTrackId, every cardParamMap value a string
//   - PUT /v1.0/card/streaming {outTrackId, guid, key, content, isFull, isFinalize, isError}: the card
//     is known, guid set, key "content" (the AI template's variable), not finalised yet
//   - at most AIStreamOpsPerSecond streaming calls per card in any second: more get HTTP 403
//     Forbidden.AccessDenied.QpsLimit
//
// Every refusal is recorded (AIRefusals), so a test proves the bot kept
// the rules by finding none.
const AIStreamOpsPerSecond = 5

// AICard is a card the fake delivered, and its stream.
type AICard struct {
	OutTrackID string
	Template   string
	// FlowStatus is the card's flowStatus now (cardParamMap).
	FlowStatus string
	// Contents are the texts of the streaming calls, in order.
	Contents []string
	// Finalized and Error are the isFinalize and isError of the stream's end.
	Finalized, Error bool
	// FinalizedAt is when the stream was finalised.
	FinalizedAt time.Time
	ops         []time.Time
}

type aiCards struct {
	now      func() time.Time
	cards    map[string]*AICard
	order    []string
	refusals []string
}

// SetAIClock makes now the clock of the per-card streaming rate; nil is
// the wall clock.
func (f *Fake) SetAIClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ai.now = now
}

// AICards returns copies of the AI cards (a flowStatus in their data), in
// delivery order.
func (f *Fake) AICards() []AICard {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []AICard
	for _, id := range f.ai.order {
		c := *f.ai.cards[id]
		c.Contents = append([]string(nil), c.Contents...)
		c.ops = nil
		out = append(out, c)
	}
	return out
}

// AIRefusals returns why the fake refused card and streaming calls.
func (f *Fake) AIRefusals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ai.refusals...)
}

func (f *Fake) aiRefuseLocked(w http.ResponseWriter, status int, code, msg string) {
	f.ai.refusals = append(f.ai.refusals, msg)
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"code": code, "message": msg})
	_, _ = w.Write(b)
}

// refuse answers a refused card call.
func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"code": code, "message": msg})
	_, _ = w.Write(b)
}

// cardCreated checks and records a createAndDeliver of an AI card (its
// cardParamMap has a flowStatus); false: refused (answered). Another card
// is refused in a space the robot is not in (RefuseSpace) and when its
// outTrackId was used already (one card per outTrackId).
func (f *Fake) cardCreated(w http.ResponseWriter, c Call) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, _ := c.Body["cardData"].(map[string]any)
	params, _ := data["cardParamMap"].(map[string]any)
	space, _ := c.Body["openSpaceId"].(string)
	if f.outOf[space] {
		refuse(w, 400, "param.robotNotInGroup", "the robot is not a member of "+space)
		return false
	}
	if _, ai := params["flowStatus"]; !ai {
		// An interactive card: one card per outTrackId, as DingTalk keeps.
		id, _ := c.Body["outTrackId"].(string)
		if _, err := deliveryOf(c); err != nil {
			refuse(w, 400, "param.recipientsInvalid", err.Error())
			return false
		}
		if f.tracks[id] {
			refuse(w, 400, "param.outTrackIdDuplicated", "outTrackId "+id+" was used already")
			return false
		}
		if f.tracks == nil {
			f.tracks = map[string]bool{}
		}
		f.tracks[id] = true
		return true
	}
	id, _ := c.Body["outTrackId"].(string)
	if id == "" {
		f.aiRefuseLocked(w, 400, "param.outTrackIdEmpty", "outTrackId is empty")
		return false
	}
	if f.ai.cards[id] != nil {
		f.aiRefuseLocked(w, 400, "param.outTrackIdDuplicated", "outTrackId "+id+" was used already")
		return false
	}
	for k, v := range params {
		if _, ok := v.(string); !ok {
			f.aiRefuseLocked(w, 400, "param.cardParamMapInvalid", fmt.Sprintf("cardParamMap.%s is not a string", k))
			return false
		}
	}
	card := &AICard{OutTrackID: id}
	card.Template, _ = c.Body["cardTemplateId"].(string)
	card.FlowStatus, _ = params["flowStatus"].(string)
	if f.ai.cards == nil {
		f.ai.cards = map[string]*AICard{}
	}
	f.ai.cards[id] = card
	f.ai.order = append(f.ai.order, id)
	return true
}

// cardUpdated records a card update's flowStatus.
func (f *Fake) cardUpdated(c Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, _ := c.Body["outTrackId"].(string)
	card := f.ai.cards[id]
	if card == nil {
		return
	}
	if data, ok := c.Body["cardData"].(map[string]any); ok {
		params, _ := data["cardParamMap"].(map[string]any)
		if s, ok := params["flowStatus"].(string); ok {
			card.FlowStatus = s
		}
	}
}

func (f *Fake) cardStreaming(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var b struct {
		OutTrackID string `json:"outTrackId"`
		GUID       string `json:"guid"`
		Key        string `json:"key"`
		Content    string `json:"content"`
		IsFull     bool   `json:"isFull"`
		IsFinalize bool   `json:"isFinalize"`
		IsError    bool   `json:"isError"`
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("x-acs-dingtalk-access-token") == "" {
		f.aiRefuseLocked(w, 401, "InvalidAuthentication", "no access token")
		return
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		f.aiRefuseLocked(w, 400, "param.invalid", "bad body: "+err.Error())
		return
	}
	card := f.ai.cards[b.OutTrackID]
	switch {
	case card == nil:
		f.aiRefuseLocked(w, 400, "param.outTrackIdNotFound", "unknown outTrackId "+b.OutTrackID)
		return
	case b.GUID == "":
		f.aiRefuseLocked(w, 400, "param.guidEmpty", "guid is empty")
		return
	case b.Key != "content":
		f.aiRefuseLocked(w, 400, "param.keyInvalid", fmt.Sprintf("key %q is not a variable of the template", b.Key))
		return
	case card.Finalized:
		f.aiRefuseLocked(w, 400, "card.streamFinalized", "the stream of "+b.OutTrackID+" is finalised")
		return
	}
	now := time.Now()
	if f.ai.now != nil {
		now = f.ai.now()
	}
	recent := card.ops[:0]
	for _, t := range card.ops {
		if now.Sub(t) < time.Second {
			recent = append(recent, t)
		}
	}
	card.ops = recent
	if len(card.ops) >= AIStreamOpsPerSecond {
		f.aiRefuseLocked(w, 403, "Forbidden.AccessDenied.QpsLimit", fmt.Sprintf("card %s: more than %d streaming calls in a second", b.OutTrackID, AIStreamOpsPerSecond))
		return
	}
	card.ops = append(card.ops, now)
	card.Contents = append(card.Contents, b.Content)
	if b.IsFinalize {
		card.Finalized, card.Error, card.FinalizedAt = true, b.IsError, time.Now()
	}
	_, _ = io.WriteString(w, `{"success":true,"result":true}`)
}
