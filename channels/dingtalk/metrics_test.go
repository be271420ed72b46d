package dingtalk

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
)

// platformRecorder is a channels.PlatformMetrics that writes down what
// it was told, one line a count.
type platformRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (p *platformRecorder) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, s)
}

func (p *platformRecorder) Request(platform, api, code string) {
	p.add(fmt.Sprintf("request %s %s %s", platform, api, code))
}
func (p *platformRecorder) Throttled(platform, api string) {
	p.add("throttled " + platform + " " + api)
}
func (p *platformRecorder) Retried(platform, api string) { p.add("retried " + platform + " " + api) }
func (p *platformRecorder) DeliveryFailed(platform, api string) {
	p.add("failed " + platform + " " + api)
}

// take returns the lines written down since the last take.
func (p *platformRecorder) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lines
	p.lines = nil
	return l
}

// token is the count of the access token's call, before the first API
// call of a channel.
const token = "request dingtalk oauth2/accessToken 0"

// platformCases are what DingTalk answers a channel and what is counted:
// each runs on a new channel against a new fake (want begins with the
// access token's call).
var platformCases = []struct {
	name  string
	setup func(f *dingtalktest.Fake)
	run   func(ctx context.Context, c *Channel) error
	fails bool
	want  []string
}{
	{"group send", nil,
		func(ctx context.Context, c *Channel) error {
			return c.Send(ctx, channels.Target{Channel: Name, ChatID: "cid1"}, channels.Outgoing{Text: "hi"})
		}, false,
		[]string{token, "request dingtalk robot/groupMessages/send 0"}},
	{"group send, robot not in the group", func(f *dingtalktest.Fake) { f.LeaveGroup("cid1") },
		func(ctx context.Context, c *Channel) error {
			return c.Send(ctx, channels.Target{Channel: Name, ChatID: "cid1"}, channels.Outgoing{Text: "hi"})
		}, true,
		[]string{token, "request dingtalk robot/groupMessages/send robot.notInGroup", "failed dingtalk robot/groupMessages/send"}},
	{"card to a group the robot is not in", func(f *dingtalktest.Fake) { f.LeaveGroup("cid1") },
		func(ctx context.Context, c *Channel) error {
			_, err := c.ShowApproval(ctx, channels.Target{Channel: Name, ChatID: "cid1", UserID: "alice"},
				cards.View{ApprovalID: "ap_1", Title: "Approval needed", Tool: "erase", PayloadSHA256: "abc", Requester: "alice"})
			return err
		}, true,
		[]string{token, "request dingtalk card/instances/createAndDeliver undelivered", "failed dingtalk card/instances/createAndDeliver"}},
	{"1:1 send to no staff", func(f *dingtalktest.Fake) { f.UnknownStaff("bob") },
		func(ctx context.Context, c *Channel) error {
			return c.sendDirect(ctx, "app-key", []string{"bob"}, "sampleText", map[string]string{"content": "hi"})
		}, true,
		[]string{token, "request dingtalk robot/oToMessages/batchSend undelivered", "failed dingtalk robot/oToMessages/batchSend"}},
	{"1:1 send throttled once", func(f *dingtalktest.Fake) { f.FlowControl("bob", 1) },
		func(ctx context.Context, c *Channel) error {
			return c.sendDirect(ctx, "app-key", []string{"bob"}, "sampleText", map[string]string{"content": "hi"})
		}, false,
		[]string{token, "request dingtalk robot/oToMessages/batchSend flow_controlled", "throttled dingtalk robot/oToMessages/batchSend",
			"retried dingtalk robot/oToMessages/batchSend", "request dingtalk robot/oToMessages/batchSend 0"}},
	{"1:1 send throttled for good", func(f *dingtalktest.Fake) { f.FlowControl("bob", flowRetries+1) },
		func(ctx context.Context, c *Channel) error {
			return c.sendDirect(ctx, "app-key", []string{"bob"}, "sampleText", map[string]string{"content": "hi"})
		}, true,
		[]string{token, "request dingtalk robot/oToMessages/batchSend flow_controlled", "throttled dingtalk robot/oToMessages/batchSend",
			"retried dingtalk robot/oToMessages/batchSend", "request dingtalk robot/oToMessages/batchSend flow_controlled", "throttled dingtalk robot/oToMessages/batchSend",
			"retried dingtalk robot/oToMessages/batchSend", "request dingtalk robot/oToMessages/batchSend flow_controlled", "throttled dingtalk robot/oToMessages/batchSend",
			"failed dingtalk robot/oToMessages/batchSend"}},
	{"wrong secret", func(f *dingtalktest.Fake) { f.RequireSecret("another") },
		func(ctx context.Context, c *Channel) error { return c.CheckCredentials(ctx) }, true,
		// The token's refusal alone: no message was lost.
		[]string{"request dingtalk oauth2/accessToken invalidClientSecret"}},
}

// TestPlatformMetrics: every OpenAPI call is counted with the code
// DingTalk answered, a throttle (flowControlledStaffIdList) as a
// throttle and its retry, and what was not delivered (a group the robot
// left, deliverResults success:false, invalidStaffIdList, throttled for
// good) as a delivery failure: what /readyz's "dingtalk keeps refusing"
// is made of.
func TestPlatformMetrics(t *testing.T) {
	for _, tc := range platformCases {
		t.Run(tc.name, func(t *testing.T) {
			f := dingtalktest.New(t)
			rec := &platformRecorder{}
			c, err := New(Config{ClientID: "app-key", ClientSecret: "app-secret", CardTemplateID: "tpl.schema",
				APIBaseURL: f.URL(), WebhookBaseURL: f.URL(), Lang: "en", HTTPTimeout: 5 * time.Second, Metrics: rec}, quiet)
			if err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(f)
			}
			err = tc.run(context.Background(), c)
			if (err != nil) != tc.fails {
				t.Fatalf("err %v, want failure %v", err, tc.fails)
			}
			if got := rec.take(); !slices.Equal(got, tc.want) {
				t.Fatalf("counted\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
