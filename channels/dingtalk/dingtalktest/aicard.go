package dingtalktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// AI card streaming, as the fake enforces it (the rules of the notes in
// shared/reference, cards-forms-privacy-streaming.md B3/B4; the error codes
// are the fake's, unconfirmed against DingTalk):
//   - createAndDeliver: as every card (rules.go)
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
	// Delivered: createAndDeliver reached its space (deliverResults).
	Delivered bool
	ops       []time.Time
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

// aiRefuseLocked answers a refused AI card call (recorded in AIRefusals
// too).
func (f *Fake) aiRefuseLocked(w http.ResponseWriter, status int, code, msg string) {
	f.ai.refusals = append(f.ai.refusals, msg)
	f.apiErrorLocked(w, status, code, msg)
}

// cardCreated checks and records a createAndDeliver (rules.go): an
// outTrackId not used before, every cardParamMap value a string within
// MaxParamBytes, recipients (when given) user ids; it returns the
// deliverResults, and false when the call was refused (answered). The
// card of an AI template (its cardParamMap has a flowStatus) is kept for
// its stream.
func (f *Fake) cardCreated(w http.ResponseWriter, c Call) ([]deliverResult, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, _ := c.Body["cardData"].(map[string]any)
	params, _ := data["cardParamMap"].(map[string]any)
	_, ai := params["flowStatus"]
	refuse := f.apiErrorLocked
	if ai {
		refuse = f.aiRefuseLocked
	}
	id, _ := c.Body["outTrackId"].(string)
	if id == "" {
		refuse(w, http.StatusBadRequest, "param.outTrackIdEmpty", "outTrackId is empty")
		return nil, false
	}
	if code, msg := bodyParamsFault(c.Body); code != "" {
		refuse(w, http.StatusBadRequest, code, msg)
		return nil, false
	}
	if _, err := deliveryOf(c); err != nil {
		refuse(w, http.StatusBadRequest, "param.recipientsInvalid", err.Error())
		return nil, false
	}
	if f.tracks[id] {
		refuse(w, http.StatusBadRequest, "param.cardAlreadyExist", "a card with outTrackId "+id+" exists already")
		return nil, false
	}
	if f.tracks == nil {
		f.tracks = map[string]bool{}
	}
	f.tracks[id] = true
	f.cards.updateBody(id, c.Body, true)
	space, _ := c.Body["openSpaceId"].(string)
	results := f.deliverLocked(space)
	if !ai {
		return results, true
	}
	card := &AICard{OutTrackID: id}
	card.Template, _ = c.Body["cardTemplateId"].(string)
	card.FlowStatus, _ = params["flowStatus"].(string)
	card.Delivered = slices.ContainsFunc(results, func(r deliverResult) bool { return r.Success })
	if f.ai.cards == nil {
		f.ai.cards = map[string]*AICard{}
	}
	f.ai.cards[id] = card
	f.ai.order = append(f.ai.order, id)
	return results, true
}

// cardUpdated checks and records a card update (PUT
// /v1.0/card/instances): its cardParamMaps keep the rules, and a card
// updated while a callback of it is being handled is a breach; an AI
// card's flowStatus is kept. False: refused (answered).
func (f *Fake) cardUpdated(w http.ResponseWriter, c Call) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, _ := c.Body["outTrackId"].(string)
	if id == "" {
		f.apiErrorLocked(w, http.StatusBadRequest, "param.outTrackIdEmpty", "outTrackId is empty")
		return false
	}
	if code, msg := bodyParamsFault(c.Body); code != "" {
		f.apiErrorLocked(w, http.StatusBadRequest, code, msg)
		return false
	}
	f.updatedLocked(id)
	f.cards.updateBody(id, c.Body, false)
	card := f.ai.cards[id]
	if card == nil {
		return true
	}
	if data, ok := c.Body["cardData"].(map[string]any); ok {
		params, _ := data["cardParamMap"].(map[string]any)
		if s, ok := params["flowStatus"].(string); ok {
			card.FlowStatus = s
		}
	}
	return true
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
