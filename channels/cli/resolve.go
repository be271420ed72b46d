package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// resolve offers the choice on a frozen approval (its effect unknown) the
// chat has just printed: d (done, the rest of the line its note), r
// (retry), a (abandon); anything else, an interrupt or the end of the
// input leaves it frozen (the web page, a card or the HTTP API can still
// resolve it). The choice is decided as a click on its card is.
func (r *repl) resolve(ctx context.Context, v cards.View) error {
	r.printf("%s", r.bold(words.In(r.c.cfg.Lang, words.CLIResolvePrompt)))
	line, err := r.readLine(ctx, false)
	if err != nil {
		r.printf("\n")
		if errors.Is(err, errInterrupt) || ctx.Err() == nil {
			return nil
		}
		return errQuit
	}
	res, note := parseResolution(line)
	if res == "" {
		return nil
	}
	return r.decide(ctx, channels.CardAction{MessageID: "cli-" + string(v.ApprovalID), ApprovalID: v.ApprovalID,
		Verb: approval.Resolve, Resolution: res, PayloadSHA256: v.PayloadSHA256, Comment: note})
}

// parseResolution reads the answer to the resolve prompt: its first word
// names the resolution (d, done, 已完成; r, retry, 重试; a, abandon, 放弃;
// any case), the rest is the note. Anything else is no choice ("").
func parseResolution(line string) (approval.Resolution, string) {
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
	switch strings.ToLower(word) {
	case "d", "done", "已完成":
		return approval.ResolveDone, rest
	case "r", "retry", "重试":
		return approval.ResolveRetry, rest
	case "a", "abandon", "放弃":
		return approval.ResolveAbandon, rest
	}
	return "", ""
}
