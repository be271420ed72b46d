package dingtalktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// call sends body to path on f and returns the HTTP status and the
// decoded answer.
func call(t *testing.T, f *Fake, method, path string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, f.URL()+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-acs-dingtalk-access-token", "fake-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: answer: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// wantError checks a refusal in DingTalk's shape: status, code, a message
// and a requestid.
func wantError(t *testing.T, status int, out map[string]any, wantStatus int, code string) {
	t.Helper()
	if status != wantStatus || out["code"] != code || out["message"] == "" || out["requestid"] == nil {
		t.Fatalf("HTTP %d %v, want HTTP %d code %s with message and requestid", status, out, wantStatus, code)
	}
}

// card is a createAndDeliver body for space with params.
func card(track, space string, params map[string]string) map[string]any {
	return map[string]any{"cardTemplateId": "tpl.schema", "outTrackId": track, "callbackType": "STREAM",
		"cardData": map[string]any{"cardParamMap": params}, "openSpaceId": space, "userIdType": 1}
}

// delivered returns result.deliverResults[0] of a createAndDeliver answer
// (HTTP 200, success true, as DingTalk answers even when a space failed).
func delivered(t *testing.T, f *Fake, body map[string]any) map[string]any {
	t.Helper()
	status, out := call(t, f, "POST", "/v1.0/card/instances/createAndDeliver", body)
	res, _ := out["result"].(map[string]any)
	list, _ := res["deliverResults"].([]any)
	if status != 200 || out["success"] != true || len(list) != 1 {
		t.Fatalf("HTTP %d %v, want 200, success true and one deliverResult", status, out)
	}
	r, _ := list[0].(map[string]any)
	return r
}

// stream connects a bare client to f's stream gateway that answers each
// card callback with answer(frame) (the ACK's data).
func stream(t *testing.T, f *Fake, answer func(data map[string]any) string) {
	t.Helper()
	_, tk := call(t, f, http.MethodPost, "/v1.0/gateway/connections/open", map[string]any{"clientId": "k", "clientSecret": "s"})
	ep, _ := tk["endpoint"].(string)
	conn, _, err := websocket.DefaultDialer.Dial(fmt.Sprintf("%s?ticket=%v", ep, tk["ticket"]), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	f.WaitConn(5 * time.Second)
	go func() {
		for {
			var fr struct {
				Headers map[string]string `json:"headers"`
				Data    string            `json:"data"`
			}
			if conn.ReadJSON(&fr) != nil {
				return
			}
			var d map[string]any
			_ = json.Unmarshal([]byte(fr.Data), &d)
			ack := map[string]any{"code": 200, "message": "OK", "data": answer(d),
				"headers": map[string]string{"messageId": fr.Headers["messageId"], "contentType": "application/json"}}
			if conn.WriteJSON(ack) != nil {
				return
			}
		}
	}()
}

// stepClock is a clock a test moves.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func clickOf(track string) map[string]any {
	return map[string]any{"outTrackId": track, "userId": "alice", "userIdType": 1, "type": "actionCallback",
		"content": `{"cardPrivateData":{"actionIds":["confirm"],"params":{"action":"confirm"}}}`}
}

// respond is a callback answer's ACK data with cardParamMap params.
func respond(params map[string]string) string {
	b, _ := json.Marshal(map[string]any{"response": map[string]any{"cardUpdateOptions": map[string]bool{"updateCardDataByKey": true},
		"cardData": map[string]any{"cardParamMap": params}}})
	return string(b)
}

// rules: each documented rule the fake keeps, shown to bite (an illegal
// call refused, or its breach recorded) and to let the legal call pass.
// The sources are cited in rules.go.
var rules = []struct {
	name string
	run  func(t *testing.T, f *Fake)
}{
	{"createAndDeliver: a group the robot is not in fails in deliverResults, HTTP 200", func(t *testing.T, f *Fake) {
		if r := delivered(t, f, card("c1", "dtv1.card//IM_GROUP.cid1", nil)); r["success"] != true || r["spaceId"] != "cid1" {
			t.Fatalf("a group the robot is in: %v", r)
		}
		f.LeaveGroup("cid2")
		r := delivered(t, f, card("c2", "dtv1.card//IM_GROUP.cid2", nil))
		if r["success"] != false || r["spaceType"] != "IM_GROUP" || r["spaceId"] != "cid2" || r["errorMsg"] == "" {
			t.Fatalf("a group the robot is not in: %v", r)
		}
	}},
	{"createAndDeliver: an unknown or encrypted staff id fails in deliverResults", func(t *testing.T, f *Fake) {
		if r := delivered(t, f, card("c1", "dtv1.card//IM_ROBOT.alice", nil)); r["success"] != true {
			t.Fatalf("staff: %v", r)
		}
		f.UnknownStaff("bob")
		for i, sp := range []string{"dtv1.card//IM_ROBOT.bob", "dtv1.card//IM_ROBOT.$:LWCP_v1:$abc", "IM_ROBOT.alice"} {
			r := delivered(t, f, card(fmt.Sprint("d", i), sp, nil))
			if r["success"] != false || r["errorMsg"] == "" {
				t.Fatalf("%s: %v", sp, r)
			}
		}
	}},
	{"outTrackId: one card each, a second create is param.cardAlreadyExist", func(t *testing.T, f *Fake) {
		body := card("same", "dtv1.card//IM_GROUP.cid1", map[string]string{"status": "pending"})
		if st, out := call(t, f, "POST", "/v1.0/card/instances/createAndDeliver", body); st != 200 {
			t.Fatalf("first: %d %v", st, out)
		}
		st, out := call(t, f, "POST", "/v1.0/card/instances/createAndDeliver", body)
		wantError(t, st, out, 400, "param.cardAlreadyExist")
	}},
	{"cardParamMap: each value at most 1 KB on create (bytes, not runes)", func(t *testing.T, f *Fake) {
		ok := card("c1", "dtv1.card//IM_GROUP.cid1", map[string]string{"preview": strings.Repeat("a", MaxParamBytes)})
		if st, out := call(t, f, "POST", "/v1.0/card/instances/createAndDeliver", ok); st != 200 {
			t.Fatalf("1024 bytes: %d %v", st, out)
		}
		for i, v := range []string{strings.Repeat("a", MaxParamBytes+1), strings.Repeat("汉", 342)} {
			st, out := call(t, f, "POST", "/v1.0/card/instances/createAndDeliver", card(fmt.Sprint("big", i), "dtv1.card//IM_GROUP.cid1", map[string]string{"preview": v}))
			wantError(t, st, out, 400, "param.cardParamMapValueTooLong")
		}
	}},
	{"cardParamMap: each value at most 1 KB on update, public and private data", func(t *testing.T, f *Fake) {
		upd := func(pub, priv string) map[string]any {
			return map[string]any{"outTrackId": "c1", "cardData": map[string]any{"cardParamMap": map[string]string{"result": pub}},
				"privateData": map[string]any{"alice": map[string]any{"cardParamMap": map[string]string{"status_text": priv}}}}
		}
		if st, out := call(t, f, "PUT", "/v1.0/card/instances", upd("short", "short")); st != 200 || out["success"] != true {
			t.Fatalf("legal update: %d %v", st, out)
		}
		big := strings.Repeat("x", MaxParamBytes+1)
		st, out := call(t, f, "PUT", "/v1.0/card/instances", upd(big, "s"))
		wantError(t, st, out, 400, "param.cardParamMapValueTooLong")
		st, out = call(t, f, "PUT", "/v1.0/card/instances", upd("s", big))
		wantError(t, st, out, 400, "param.cardParamMapValueTooLong")
	}},
	{"batchSend: at most 20 userIds", func(t *testing.T, f *Fake) {
		ids := make([]string, MaxBatchUsers+1)
		for i := range ids {
			ids[i] = fmt.Sprint("u", i)
		}
		body := func(ids []string) map[string]any {
			return map[string]any{"robotCode": "r", "userIds": ids, "msgKey": "sampleText", "msgParam": `{"content":"hi"}`}
		}
		if st, out := call(t, f, "POST", "/v1.0/robot/oToMessages/batchSend", body(ids[:MaxBatchUsers])); st != 200 || out["processQueryKey"] == nil {
			t.Fatalf("20 ids: %d %v", st, out)
		}
		st, out := call(t, f, "POST", "/v1.0/robot/oToMessages/batchSend", body(ids))
		wantError(t, st, out, 400, "param.userIdsTooMany")
	}},
	{"batchSend: unknown staff in invalidStaffIdList, throttled in flowControlledStaffIdList, HTTP 200", func(t *testing.T, f *Fake) {
		f.UnknownStaff("bob")
		f.FlowControl("carol", 1)
		body := map[string]any{"robotCode": "r", "userIds": []string{"alice", "bob", "carol"}, "msgKey": "sampleText", "msgParam": `{"content":"hi"}`}
		st, out := call(t, f, "POST", "/v1.0/robot/oToMessages/batchSend", body)
		if st != 200 || fmt.Sprint(out["invalidStaffIdList"]) != "[bob]" || fmt.Sprint(out["flowControlledStaffIdList"]) != "[carol]" {
			t.Fatalf("HTTP %d %v", st, out)
		}
		if got := f.DirectTexts("alice"); len(got) != 1 || len(f.DirectTexts("bob"))+len(f.DirectTexts("carol")) != 0 {
			t.Fatalf("delivered to alice %q, bob %q, carol %q", got, f.DirectTexts("bob"), f.DirectTexts("carol"))
		}
		_, out = call(t, f, "POST", "/v1.0/robot/oToMessages/batchSend", body)
		if fmt.Sprint(out["flowControlledStaffIdList"]) != "[]" {
			t.Fatalf("throttled again: %v", out)
		}
	}},
	{"groupMessages/send: refused in a group the robot is not in", func(t *testing.T, f *Fake) {
		body := func(cid string) map[string]any {
			return map[string]any{"robotCode": "r", "openConversationId": cid, "msgKey": "sampleText", "msgParam": `{"content":"hi"}`}
		}
		if st, out := call(t, f, "POST", "/v1.0/robot/groupMessages/send", body("cid1")); st != 200 {
			t.Fatalf("joined: %d %v", st, out)
		}
		f.LeaveGroup("cid2")
		st, out := call(t, f, "POST", "/v1.0/robot/groupMessages/send", body("cid2"))
		wantError(t, st, out, 400, "robot.notInGroup")
		if f.CountText("hi") != 1 {
			t.Fatalf("texts %q", f.Texts())
		}
	}},
	{"card callback: answered within 2 s", func(t *testing.T, f *Fake) {
		clk := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		f.SetCallbackClock(clk.Now)
		late := time.Duration(0)
		stream(t, f, func(map[string]any) string { clk.add(late); return respond(map[string]string{"status": "processing"}) })
		late = CallbackDeadline - time.Millisecond
		f.Push(cardCallbackTopic, clickOf("c1"))
		if v := f.Violations(); len(v) != 0 {
			t.Fatalf("an answer in time: %q", v)
		}
		late = CallbackDeadline + 500*time.Millisecond
		f.Push(cardCallbackTopic, clickOf("c1"))
		if v := f.TakeViolations(); len(v) != 1 || !strings.Contains(v[0], "answered after 2.5s") {
			t.Fatalf("a late answer: %q", v)
		}
	}},
	{"card callback: the card is not updated while its callback is handled", func(t *testing.T, f *Fake) {
		upd := map[string]any{"outTrackId": "c1", "cardData": map[string]any{"cardParamMap": map[string]string{"status": "executed"}}}
		stream(t, f, func(d map[string]any) string {
			if d["outTrackId"] == "c1" {
				call(t, f, "PUT", "/v1.0/card/instances", upd)
			}
			return respond(map[string]string{"status": "processing"})
		})
		f.Push(cardCallbackTopic, clickOf("c2")) // no update of c2 meanwhile
		call(t, f, "PUT", "/v1.0/card/instances", map[string]any{"outTrackId": "c2", "cardData": map[string]any{"cardParamMap": map[string]string{"status": "executed"}}})
		if v := f.Violations(); len(v) != 0 {
			t.Fatalf("an update after the answer: %q", v)
		}
		f.Push(cardCallbackTopic, clickOf("c1"))
		if v := f.TakeViolations(); len(v) != 1 || !strings.Contains(v[0], "c1 updated") {
			t.Fatalf("an update inside the callback: %q", v)
		}
	}},
	{"card callback: the answer's cardParamMap values at most 1 KB", func(t *testing.T, f *Fake) {
		value := "short"
		stream(t, f, func(map[string]any) string { return respond(map[string]string{"result": value}) })
		f.Push(cardCallbackTopic, clickOf("c1"))
		value = strings.Repeat("y", MaxParamBytes+1)
		f.Push(cardCallbackTopic, clickOf("c1"))
		if v := f.TakeViolations(); len(v) != 1 || !strings.Contains(v[0], "response.cardData.cardParamMap.result") {
			t.Fatalf("a long value in the answer: %q", v)
		}
	}},
}

// TestRules proves that each rule of the fake bites.
func TestRules(t *testing.T) {
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) { r.run(t, New(t)) })
	}
}

// TestCardViewAndClick: what a card shows is its created data changed by
// key by an update, with a user's private data over it for that user
// alone; a click sends the button's constants, the card's values of its
// variables as the clicker sees them and the inputs, all strings, in the
// callback's double-encoded content.
func TestCardViewAndClick(t *testing.T) {
	f := New(t)
	delivered(t, f, card("q1", "dtv1.card//IM_GROUP.cid1", map[string]string{"approval_id": "ap_1", "payload_sha256": "ab", "answer_buttons": "true", "title": "Q"}))
	status, _ := call(t, f, "PUT", "/v1.0/card/instances", map[string]any{"outTrackId": "q1",
		"cardData":          map[string]any{"cardParamMap": map[string]string{"title": "Q2"}},
		"privateData":       map[string]any{"eve": map[string]any{"cardParamMap": map[string]string{"answer_buttons": "false"}}},
		"cardUpdateOptions": map[string]bool{"updateCardDataByKey": true, "updatePrivateDataByKey": true}})
	if status != 200 {
		t.Fatalf("update HTTP %d", status)
	}
	if v := f.CardView("q1", "bob"); v["title"] != "Q2" || v["approval_id"] != "ap_1" || v["answer_buttons"] != "true" {
		t.Fatalf("bob sees %v", v)
	}
	if v := f.CardView("q1", "eve"); v["answer_buttons"] != "false" || v["title"] != "Q2" {
		t.Fatalf("eve sees %v", v)
	}
	b := Button{ID: "answer", Const: map[string]string{"action": "answer"}, Vars: []string{"approval_id", "payload_sha256"}, VisibleIf: "answer_buttons"}
	c := f.Click("q1", "bob", "cid1", b, map[string]string{"answer_1": "2"})
	var content struct {
		CardPrivateData struct {
			ActionIDs []string       `json:"actionIds"`
			Params    map[string]any `json:"params"`
		} `json:"cardPrivateData"`
	}
	if err := json.Unmarshal([]byte(c["content"].(string)), &content); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"action": "answer", "approval_id": "ap_1", "payload_sha256": "ab", "answer_1": "2"}
	if fmt.Sprint(content.CardPrivateData.Params) != fmt.Sprint(want) || content.CardPrivateData.ActionIDs[0] != "answer" || c["userId"] != "bob" {
		t.Fatalf("click %v", c)
	}
	if f.CardView("nope", "bob") != nil {
		t.Fatal("a card never created has a view")
	}
}
