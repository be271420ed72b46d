package feishu

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// streamAnswer streams pieces into one answer on ch (through the
// channel's stream writer), calling between after each piece, and
// finishes it with the whole text.
func streamAnswer(t *testing.T, ch *Channel, pieces []string, between func(i int)) string {
	t.Helper()
	st, err := ch.OpenStream(context.Background(), channels.Target{ChatID: "oc_long"})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for i, p := range pieces {
		st.Append(p)
		all.WriteString(p)
		if between != nil {
			between(i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := st.Finish(ctx, all.String(), channels.EndAnswer); err != nil {
		t.Fatalf("finish: %v", err)
	}
	return all.String()
}

// saidOnce checks that the fake's card entities, in order, together show
// want once and complete, each sent once and none left streaming, and
// returns how many cards it took.
func saidOnce(t *testing.T, fake *feishutest.Server, want string) int {
	t.Helper()
	var got strings.Builder
	es := fake.CardEntities()
	for _, e := range es {
		if e.Sent != 1 || e.Streaming {
			t.Fatalf("card %s sent %d times, streaming %v", e.ID, e.Sent, e.Streaming)
		}
		got.WriteString(shows(e))
	}
	if got.String() != want {
		t.Fatalf("the %d cards show %d bytes, want the answer's %d, once and complete (first difference at %d)",
			len(es), got.Len(), len(want), firstDiff(got.String(), want))
	}
	return len(es)
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A long answer (over CardKit's 30 KB per card) streams into as many
// cards as it needs: each is finished within the limit before the rest
// goes on in the next, and CardKit refuses nothing.
func TestStreamedAnswerOverOneCard(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	cfg := testConfig(fake)
	cfg.StreamInterval = minStreamInterval
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	for i := range 40 {
		pieces = append(pieces, fmt.Sprintf("第 %d 段：%s\n", i, strings.Repeat("订单 \"已取消\" <b> ", 100)))
	}
	want := streamAnswer(t, ch, pieces, nil)
	if r := fake.CardKitRefusals(); len(r) > 0 {
		t.Fatalf("CardKit refused %d calls: %.300q", len(r), r)
	}
	if n := saidOnce(t, fake, want); n < 3 {
		t.Fatalf("%d cards for %d bytes", n, len(want))
	}
}

// Streaming mode closes itself 10 minutes after a card was opened. The
// rest of an answer that takes longer goes on in a new card, and the
// cards say it once: whether the bot finishes the card first (its clock
// says the time is nearly up) or CardKit ends it (200850) before.
func TestStreamedAnswerOverTenMinutes(t *testing.T) {
	for _, botKnows := range []bool{true, false} {
		t.Run(fmt.Sprintf("bot's clock moves %v", botKnows), func(t *testing.T) {
			fake := feishutest.New()
			defer fake.Close()
			clock := &testClock{t: time.Now()}
			fake.SetCardKitClock(clock.now)
			cfg := testConfig(fake)
			cfg.StreamInterval = minStreamInterval
			ch, err := New(cfg, quiet)
			if err != nil {
				t.Fatal(err)
			}
			if botKnows {
				ch.now = clock.now
			}
			pieces := []string{"The first part of a slow answer. ", "More, later. ", "And the end."}
			want := streamAnswer(t, ch, pieces, func(i int) {
				if i == 0 {
					eventually(t, "the first card is out", func() bool { return len(fake.CardEntities()) == 1 })
					clock.add(feishutest.CardKitStreamingFor + time.Minute)
				}
			})
			if n := saidOnce(t, fake, want); n != 2 {
				t.Fatalf("%d cards, want 2: the first until its 10 minutes, the rest in another", n)
			}
		})
	}
}
