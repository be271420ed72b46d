package dingtalktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The platform's rules the fake keeps. Each is cited; where the docs name
// no error code the code is the fake's own, in the documented shape of an
// OpenAPI failure: an HTTP 4xx whose body is {"code", "message",
// "requestid"} (doc "服务端API错误码"; the reference notes, dingtalk.md §7:
// "Non-2xx bodies look like {"code":"…","message":"…"}").
//
//   - createAndDeliver answers HTTP 200 and success:true even when a space
//     was not reached: result.deliverResults[] holds one result per space,
//     {spaceType, spaceId, success:false, errorMsg} for a group the robot
//     is not in or a staff id that does not exist (doc
//     create-and-deliver-cards, "deliverResults"; chenhg5/cc-connect #1144
//     and PR #269 met it live). The card instance exists all the same:
//     its outTrackId is used.
//   - one outTrackId is one card: a second create answers HTTP 400
//     param.cardAlreadyExist (doc create-and-deliver-cards, error table).
//   - every cardParamMap value is a string of at most 1 KB ("参数值（最长不
//     超过1KB）", doc create-and-deliver-cards; the same map in PUT
//     /v1.0/card/instances and in a callback's answer): MaxParamBytes.
//     A longer value is refused HTTP 400 param.cardParamMapValueTooLong
//     (the code is the fake's: the doc states the limit, no code).
//   - a card callback is answered within 2 s, and the card is not updated
//     by the API while its callback is being handled ("请在 2 秒内完成业务
//     处理并响应 … 请勿在回调过程中，调用更新接口", doc event-callback-card):
//     CallbackDeadline, timed on SetCallbackClock's clock (the
//     channel's, in the channel's tests). The fake cannot refuse an
//     answer it already has:
//     it records the breach (Violations), and New fails the test with
//     every breach not taken by TakeViolations.
//   - oToMessages/batchSend answers HTTP 200 with invalidStaffIdList (ids
//     that are no staff of the org: nothing was sent to them) and
//     flowControlledStaffIdList (ids throttled: nothing was sent, try
//     later) (aliyun dingtalk SDK robot_1_0 BatchSendOTOResponseBody); at
//     most MaxBatchUsers userIds per call (BatchSendOTORequest.userIds,
//     "最多传20个"); more are refused HTTP 400 param.userIdsTooMany (the
//     fake's code).
//   - a call over a rate limit is refused before it is carried out
//     (Throttle): the new OpenAPI answers the code
//     Forbidden.AccessDenied.QpsLimitForAppkeyAndApi (per app and API, 20
//     a second on a standard org), Forbidden.AccessDenied.QpsLimitForApi
//     (per API over all of DingTalk) or, when the month's metered calls
//     are spent, Forbidden.AccessDenied.ApiCountLimitForOrg (doc
//     development/how-to-process-api-throttling-on-the-dingtalk-server,
//     调用频次与限流), with HTTP 403 (the status is not on that page;
//     field reports: DingTalk-Real-AI/dingtalk-openclaw-connector #410,
//     #444). No Retry-After is documented: the fake sends none.
//   - groupMessages/send to a group the robot is not in is refused HTTP
//     400 robot.notInGroup (the fake's code; doc robot
//     "orgGroupSend": the robot must be in the group).
const (
	MaxParamBytes    = 1024
	MaxBatchUsers    = 20
	CallbackDeadline = 2 * time.Second
)

// Space prefixes of an openSpaceId (doc create-and-deliver-cards).
const (
	groupSpace = "dtv1.card//IM_GROUP."
	robotSpace = "dtv1.card//IM_ROBOT."
)

// encryptedPrefix starts the encrypted ids DingTalk gives external
// members (senderId "$:LWCP_v1:$…"): never a staff id.
const encryptedPrefix = "$:"

// apiErrorLocked answers a refused OpenAPI call in DingTalk's shape and
// records why (Refusals). f.mu is held.
func (f *Fake) apiErrorLocked(w http.ResponseWriter, status int, code, msg string) {
	f.refusals = append(f.refusals, code+": "+msg)
	f.reqSeq++
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"code": code, "message": msg, "requestid": fmt.Sprintf("fake-req-%d", f.reqSeq)})
	_, _ = w.Write(b)
}

// apiError is apiErrorLocked for a caller without f.mu.
func (f *Fake) apiError(w http.ResponseWriter, status int, code, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.apiErrorLocked(w, status, code, msg)
}

// paramsFault says what breaks the cardParamMap rules in m (where names
// it), "" when none does.
func paramsFault(where string, m map[string]any) string {
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%s.%s is not a string", where, k)
		}
		if len(s) > MaxParamBytes {
			return fmt.Sprintf("%s.%s is %d bytes, more than %d", where, k, len(s), MaxParamBytes)
		}
	}
	return ""
}

// bodyParamsFault checks every cardParamMap of a card create or update
// body: cardData's and each privateData's.
func bodyParamsFault(body map[string]any) (code, msg string) {
	maps := map[string]map[string]any{}
	if d, ok := body["cardData"].(map[string]any); ok {
		m, _ := d["cardParamMap"].(map[string]any)
		maps["cardData.cardParamMap"] = m
	}
	if p, ok := body["privateData"].(map[string]any); ok {
		for u, d := range p {
			dm, _ := d.(map[string]any)
			m, _ := dm["cardParamMap"].(map[string]any)
			maps["privateData."+u+".cardParamMap"] = m
		}
	}
	for where, m := range maps {
		if msg := paramsFault(where, m); msg != "" {
			code = "param.cardParamMapValueTooLong"
			if strings.Contains(msg, "not a string") {
				code = "param.cardParamMapInvalid"
			}
			return code, msg
		}
	}
	return "", ""
}

// deliverResult is one space's entry of result.deliverResults.
type deliverResult struct {
	SpaceType string `json:"spaceType"`
	SpaceID   string `json:"spaceId"`
	Success   bool   `json:"success"`
	ErrorMsg  string `json:"errorMsg,omitempty"`
	CarrierID string `json:"carrierId,omitempty"`
}

// deliverLocked is where the card of openSpaceID was delivered: one
// result per space (several are joined by ";").
func (f *Fake) deliverLocked(openSpaceID string) []deliverResult {
	var out []deliverResult
	for _, sp := range strings.Split(openSpaceID, ";") {
		r := deliverResult{}
		switch {
		case strings.HasPrefix(sp, groupSpace) && len(sp) > len(groupSpace):
			r.SpaceType, r.SpaceID = "IM_GROUP", strings.TrimPrefix(sp, groupSpace)
			if f.outOf[r.SpaceID] {
				r.ErrorMsg = "robot is not in the group " + r.SpaceID
			}
		case strings.HasPrefix(sp, robotSpace) && len(sp) > len(robotSpace):
			r.SpaceType, r.SpaceID = "IM_ROBOT", strings.TrimPrefix(sp, robotSpace)
			if !f.staffLocked(r.SpaceID) {
				r.ErrorMsg = "staffId " + r.SpaceID + " does not exist"
			}
		default:
			r.SpaceID, r.ErrorMsg = sp, "spaceId is illegal"
		}
		r.Success = r.ErrorMsg == ""
		if r.Success {
			f.carrier++
			r.CarrierID = fmt.Sprintf("carrier-%d", f.carrier)
		} else {
			f.refusals = append(f.refusals, "deliver: "+r.ErrorMsg)
		}
		out = append(out, r)
	}
	return out
}

// staffLocked reports whether id is a staff id of the org: any id but an
// encrypted one and those UnknownStaff named.
func (f *Fake) staffLocked(id string) bool {
	return id != "" && !strings.HasPrefix(id, encryptedPrefix) && !f.unknown[id]
}

// LeaveGroup makes the robot not a member of the group cid: a card
// delivered there fails in deliverResults and a group message is
// refused. Until it is called the robot is in every group.
func (f *Fake) LeaveGroup(cid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.outOf == nil {
		f.outOf = map[string]bool{}
	}
	f.outOf[cid] = true
}

// RefuseSpace is LeaveGroup of the group of openSpaceID
// ("dtv1.card//IM_GROUP.<cid>").
func (f *Fake) RefuseSpace(openSpaceID string) {
	f.LeaveGroup(strings.TrimPrefix(openSpaceID, groupSpace))
}

// UnknownStaff makes ids no staff of the org: a card delivered to their
// 1:1 chat fails in deliverResults and batchSend lists them as invalid.
// Every other id but an encrypted one ("$:…") is staff.
func (f *Fake) UnknownStaff(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.unknown == nil {
		f.unknown = map[string]bool{}
	}
	for _, id := range ids {
		f.unknown[id] = true
	}
}

// FlowControl makes the next n batchSend calls naming id list it in
// flowControlledStaffIdList (nothing sent to it).
func (f *Fake) FlowControl(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flow == nil {
		f.flow = map[string]int{}
	}
	f.flow[id] = n
}

// Refusals returns why the fake refused OpenAPI calls or failed a
// delivery, in order (AIRefusals are the AI card's alone).
func (f *Fake) Refusals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refusals...)
}

// Violations returns the breaches of the rules the fake cannot refuse (a
// late callback answer, a card updated while its callback is handled,
// an answer's cardParamMap over the limit).
func (b *breaches) Violations() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.list...)
}

// TakeViolations returns the breaches recorded so far and forgets them,
// so that the test's end does not fail for them.
func (b *breaches) TakeViolations() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.list
	b.list = nil
	return v
}

// SetCallbackClock makes now the clock that times callback answers
// against CallbackDeadline; nil is the wall clock. Give it the clock the
// channel's click wait runs on (dingtalk.Config.Clock): the deadline then
// measures how long the channel chose to wait before answering, which a
// loaded machine cannot stretch, while an answer the channel holds for
// anything else (a tool run or a card update inside the callback) still
// never comes before the test lets it (the rule is not weakened: such a
// test holds the tool until after the answer).
func (f *gateway) SetCallbackClock(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cbNow = now
}

func (f *gateway) cbClockLocked() time.Time {
	if f.cbNow != nil {
		return f.cbNow()
	}
	return time.Now()
}

// callbackAnswered checks the ACK of a card callback of outTrackID pushed
// at start: within CallbackDeadline, every value of its cardParamMaps
// within MaxParamBytes.
func (f *gateway) callbackAnswered(outTrackID, user string, start time.Time, ack map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if took := f.cbClockLocked().Sub(start); took > CallbackDeadline {
		f.breaches.add(fmt.Sprintf("card callback of %s answered after %v, more than %v: DingTalk shows the clicker a failure", outTrackID, took.Round(time.Millisecond), CallbackDeadline))
	}
	if f.inflight[outTrackID]--; f.inflight[outTrackID] <= 0 {
		delete(f.inflight, outTrackID)
	}
	raw, _ := ack["data"].(string)
	var data struct {
		Response struct {
			CardUpdateOptions struct {
				UpdateCardDataByKey    bool `json:"updateCardDataByKey"`
				UpdatePrivateDataByKey bool `json:"updatePrivateDataByKey"`
			} `json:"cardUpdateOptions"`
			CardData        *struct{ CardParamMap map[string]any } `json:"cardData"`
			UserPrivateData *struct{ CardParamMap map[string]any } `json:"userPrivateData"`
		} `json:"response"`
	}
	if json.Unmarshal([]byte(raw), &data) != nil {
		return
	}
	// DingTalk applies the answer to the card ("DingTalk applies it to
	// the card", dingtalk.md §4): cardData for everyone, userPrivateData
	// for the clicker.
	if d := data.Response.CardData; d != nil {
		if msg := paramsFault("response.cardData.cardParamMap", d.CardParamMap); msg != "" {
			f.breaches.add("card callback of " + outTrackID + ": " + msg)
		} else {
			f.cards.set(outTrackID, stringMap(d.CardParamMap), data.Response.CardUpdateOptions.UpdateCardDataByKey)
		}
	}
	if d := data.Response.UserPrivateData; d != nil {
		if msg := paramsFault("response.userPrivateData.cardParamMap", d.CardParamMap); msg != "" {
			f.breaches.add("card callback of " + outTrackID + ": " + msg)
		} else if user != "" {
			f.cards.setPrivate(outTrackID, user, stringMap(d.CardParamMap), data.Response.CardUpdateOptions.UpdatePrivateDataByKey)
		}
	}
}

// handling reports whether a callback of the card outTrackID is being
// handled (pushed, its ACK not back yet).
func (f *gateway) handling(outTrackID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inflight[outTrackID] > 0
}

// updatedLocked records a breach when the card outTrackID is updated
// while a callback of it is being handled.
func (f *Fake) updatedLocked(outTrackID string) {
	if f.gateway.handling(outTrackID) {
		f.breaches.add("card " + outTrackID + " updated (PUT /v1.0/card/instances) while its callback was being handled")
	}
}

// The throttle codes of the new OpenAPI (doc development/
// how-to-process-api-throttling-on-the-dingtalk-server).
const (
	QpsLimitForAppkeyAndApi = "Forbidden.AccessDenied.QpsLimitForAppkeyAndApi"
	QpsLimitForApi          = "Forbidden.AccessDenied.QpsLimitForApi"
	ApiCountLimitForOrg     = "Forbidden.AccessDenied.ApiCountLimitForOrg"
)

// throttle is what Throttle set: the code, and how many calls are left
// to refuse (negative: every call until Throttle stops it).
type throttle struct {
	code string
	left int
}

// Throttle makes the next n OpenAPI calls (every /v1.0/ call but the
// stream's ticket; n < 0: every call until Throttle(_, 0)) refused
// before they are carried out: HTTP 403 with code (QpsLimitForApi, …),
// or, for code "", HTTP 429 with no code. Nothing of a refused call is
// done: no message sent, no card created.
func (f *Fake) Throttle(code string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.thr = throttle{code: code, left: n}
}

// throttling refuses the OpenAPI calls Throttle says, in DingTalk's
// shape, and hands every other request to next.
func (f *Fake) throttling(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1.0/") || r.URL.Path == "/v1.0/gateway/connections/open" {
			next.ServeHTTP(w, r)
			return
		}
		f.mu.Lock()
		on := f.thr.left != 0
		if f.thr.left > 0 {
			f.thr.left--
		}
		code := f.thr.code
		f.mu.Unlock()
		if !on {
			next.ServeHTTP(w, r)
			return
		}
		_, i := f.recordAt(r)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls[i].Refused = true
		if code == "" {
			f.refusals = append(f.refusals, "http_429: too many requests")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"message":"Too Many Requests"}`))
			return
		}
		f.apiErrorLocked(w, http.StatusForbidden, code, "当前请求被限流，请稍后重试 (fake)")
	})
}
