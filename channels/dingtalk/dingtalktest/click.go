package dingtalktest

import (
	"encoding/json"
	"maps"
	"sync"
)

// What a card shows and what its buttons send, as DingTalk keeps it (the
// notes in shared/reference: dingtalk.md §7, cards-forms-privacy-
// streaming.md B1/B2):
//   - a card's data is its cardParamMap as created, changed by key by
//     PUT /v1.0/card/instances (cardUpdateOptions.updateCardDataByKey;
//     without it the map is replaced) and by a callback's answer
//     (response.cardData, by key as the answer's options say); a user's
//     private data (privateData.<userId>, response.userPrivateData for the
//     clicker) overrides it for that user alone;
//   - a 「回传请求」 button sends its params in the callback's content,
//     double-encoded: {"cardPrivateData": {"actionIds": [<button id>],
//     "params": {…}}}; a param is a constant or the value of a card
//     variable, and an input component bound to a variable sends what
//     was typed under that variable's name (B1: "exact param naming
//     depends on the template — unconfirmed"); every value is a string
//     (B1: "Everything is strings");
//   - a button hidden by its visibility condition cannot be clicked: the
//     fake refuses to build such a click (the test fails), it does not
//     send one DingTalk would not.

// Button is a 「回传请求」 button of a card template.
type Button struct {
	// ID is the button's id (the callback's actionIds).
	ID string
	// Const are its constant params; Vars the params bound to card
	// variables of the same name (approval_id, payload_sha256).
	Const map[string]string
	Vars  []string
	// VisibleIf, when set, is the variable that must be "true" (for the
	// clicker) for the button to show.
	VisibleIf string
}

// cardState is the data of every card the fake created, public and per
// user.
type cardState struct {
	mu      sync.Mutex
	public  map[string]map[string]string            // outTrackId → cardParamMap
	private map[string]map[string]map[string]string // outTrackId → userId → cardParamMap
}

// stringMap reads a cardParamMap (its values are strings: the rules
// refuse any other before this is called).
func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, _ := v.(string)
		out[k] = s
	}
	return out
}

// set changes the public data of track: by key, or replaced.
func (s *cardState) set(track string, data map[string]string, byKey bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.public == nil {
		s.public = map[string]map[string]string{}
	}
	if !byKey || s.public[track] == nil {
		s.public[track] = map[string]string{}
	}
	maps.Copy(s.public[track], data)
}

// setPrivate changes user's private data of track: by key, or replaced.
func (s *cardState) setPrivate(track, user string, data map[string]string, byKey bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.private == nil {
		s.private = map[string]map[string]map[string]string{}
	}
	if s.private[track] == nil {
		s.private[track] = map[string]map[string]string{}
	}
	if !byKey || s.private[track][user] == nil {
		s.private[track][user] = map[string]string{}
	}
	maps.Copy(s.private[track][user], data)
}

// view is the data of track as user sees it; nil for an unknown card.
func (s *cardState) view(track, user string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	pub, ok := s.public[track]
	if !ok {
		return nil
	}
	out := maps.Clone(pub)
	maps.Copy(out, s.private[track][user])
	return out
}

// updateBody applies a create or update body's cardData and privateData.
func (s *cardState) updateBody(track string, body map[string]any, create bool) {
	opts, _ := body["cardUpdateOptions"].(map[string]any)
	byKey, _ := opts["updateCardDataByKey"].(bool)
	privByKey, _ := opts["updatePrivateDataByKey"].(bool)
	if d, ok := body["cardData"].(map[string]any); ok {
		m, _ := d["cardParamMap"].(map[string]any)
		s.set(track, stringMap(m), byKey && !create)
	}
	if p, ok := body["privateData"].(map[string]any); ok {
		for u, d := range p {
			dm, _ := d.(map[string]any)
			m, _ := dm["cardParamMap"].(map[string]any)
			s.setPrivate(track, u, stringMap(m), privByKey && !create)
		}
	}
}

// CardView returns the data of the card outTrackID as user sees it (its
// cardParamMap with user's private data over it); nil for a card the
// fake did not create.
func (f *Fake) CardView(outTrackID, user string) map[string]string {
	return f.cards.view(outTrackID, user)
}

// Click builds the callback of user's click on button b of the card
// outTrackID in the group space, with inputs typed into the card's input
// components (variable → text): the params are b's constants, the card's
// values of b's variables as user sees them, and the inputs. A button
// user cannot see (VisibleIf not "true") or an unknown card fails the
// test: DingTalk sends no such click.
func (f *Fake) Click(outTrackID, user, space string, b Button, inputs map[string]string) map[string]any {
	f.t.Helper()
	view := f.cards.view(outTrackID, user)
	if view == nil {
		f.t.Fatalf("fake: click on %s, a card the fake did not create", outTrackID)
	}
	if b.VisibleIf != "" && view[b.VisibleIf] != "true" {
		f.t.Fatalf("fake: %s cannot click %s on %s: it is hidden (%s=%q)", user, b.ID, outTrackID, b.VisibleIf, view[b.VisibleIf])
	}
	params := map[string]string{}
	for _, v := range b.Vars {
		if val, ok := view[v]; ok {
			params[v] = val
		}
	}
	maps.Copy(params, inputs)
	maps.Copy(params, b.Const)
	return CardCallback(outTrackID, user, space, b.ID, params)
}

// CardCallback builds a card callback's data in DingTalk's shape
// (dingtalk.md §7): content double-encoded, every param a string.
func CardCallback(outTrackID, user, space, actionID string, params map[string]string) map[string]any {
	content, _ := json.Marshal(map[string]any{"cardPrivateData": map[string]any{"actionIds": []string{actionID}, "params": params}})
	return map[string]any{"outTrackId": outTrackID, "userId": user, "userIdType": 1, "corpId": "dingcorp", "spaceType": "IM_GROUP",
		"spaceId": space, "type": "actionCallback", "extension": "{}", "content": string(content)}
}
