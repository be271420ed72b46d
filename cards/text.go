package cards

import (
	"fmt"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/words"
)

// Markdown renders v as light Markdown: the terminal chat and the DingTalk
// fallback (a robot message where an interactive card is not available)
// use it. A pending view shows the title, risk, tool, summary, the preview
// in a code block, who asked, who may approve, the expiry time and the
// short payload hash, then how to answer; a final view shows its status
// sentence once, who decided (and their comment) and then what follows the
// sentence: an excerpt of the result, or why it failed or froze.
//
// Only what the view holds is shown: the preview is already sanitised and
// the arguments are never printed beyond it. Text from the tool or the
// model (summary, preview, result) cannot inject links or formatting: inline
// text is escaped and blocks are fenced with a fence longer than any run of
// backticks inside them. lang is "zh" or "en" (anything else is English).
func Markdown(v View, lang string) string {
	if v.Redacted {
		return redactedMarkdown(v, lang)
	}
	l := labelsFor(lang)
	var b strings.Builder
	if v.Final {
		fmt.Fprintf(&b, "### %s %s · %s\n\n", statusMark(v.Status), escapeMD(statusWords(v)), escapeMD(riskOf(v)))
	} else {
		fmt.Fprintf(&b, "### %s %s · %s\n\n", riskMark(v.Risk), escapeMD(v.Title), escapeMD(riskOf(v)))
	}
	// What will happen first: the statement or command and what it
	// affects, then the risk and why, then what the tool does.
	if v.Summary != "" && len(v.Calls) <= 1 { // a batch lists its calls below
		for _, line := range strings.Split(strings.TrimSpace(v.Summary), "\n") {
			b.WriteString(escapeMD(line) + "  \n")
		}
		b.WriteString("\n")
	}
	if v.Reason != "" && !v.Final {
		fmt.Fprintf(&b, "- %s: %s\n", l.reason, escapeMD(v.Reason))
	}
	if v.About != "" && !v.Final {
		fmt.Fprintf(&b, "- %s: %s\n", l.about, escapeMD(v.About))
	}
	if !v.Final {
		fmt.Fprintf(&b, "- %s\n", escapeMD(requestedLine(v, v.requesterShown(), lang)))
	}
	fmt.Fprintf(&b, "- %s: `%s`", l.tool, codeSpan(v.Tool))
	if len(v.Calls) > 1 {
		fmt.Fprintf(&b, l.batchOf, len(v.Calls))
	}
	b.WriteString("\n")
	if len(v.Calls) > 1 {
		for i, c := range v.Calls {
			fmt.Fprintf(&b, "  %d. `%s`", i+1, codeSpan(c.Tool))
			if c.Summary != "" {
				b.WriteString(" — " + escapeMD(clip.FirstLine(c.Summary)))
			}
			b.WriteString("\n")
		}
	}
	if v.Final {
		fmt.Fprintf(&b, "- %s: %s\n", l.requester, escapeMD(v.requesterShown()))
		if v.DecidedBy != "" {
			fmt.Fprintf(&b, "- %s: %s\n", l.decidedBy, escapeMD(string(v.DecidedBy)))
		}
		if v.Comment != "" {
			fmt.Fprintf(&b, "- %s: %s\n", l.comment, escapeMD(v.Comment))
		}
		if d := DeclinedLine(v, lang); d != "" {
			b.WriteString("- " + escapeMD(d) + "\n")
		}
		for _, e := range EditedLines(v, lang) {
			b.WriteString("- " + escapeMD(e) + "\n")
		}
	} else {
		fmt.Fprintf(&b, "- %s: %s\n", l.approvers, escapeMD(v.Approvers))
		if v.Escalated != "" {
			b.WriteString("- " + escapeMD(v.Escalated) + "\n")
		}
	}
	if v.Progress != "" {
		b.WriteString("- " + escapeMD(v.Progress) + "\n")
	}
	if v.ShortHash != "" {
		fmt.Fprintf(&b, "- %s: `%s`\n", l.hash, codeSpan(v.ShortHash))
	}
	if v.Code != "" && !v.Final {
		fmt.Fprintf(&b, "- %s: `%s`\n", words.Text(words.Of(lang), words.CardCode), codeSpan(v.Code))
	}
	if v.Preview != "" {
		b.WriteString("\n" + fenced(v.Preview))
	}
	if v.Final {
		if v.Result != "" {
			fmt.Fprintf(&b, "\n%s:\n\n%s", l.resultOf(v), fenced(v.Result))
		}
	} else if v.WaitsIn != "" {
		b.WriteString("\n" + escapeMD(WaitsInLine(v, lang)) + "\n")
	} else if v.Answer != nil {
		b.WriteString("\n" + escapeMD(QuestionTyped(v, lang)) + "\n")
	} else {
		b.WriteString("\n" + l.howMD + "\n")
		if v.ApproveAlways != nil {
			b.WriteString(escapeMD(v.AlwaysHow) + "\n")
		}
	}
	return b.String()
}

// Text renders v as plain text (no Markup at all), for surfaces that show
// text as it is: the same facts as Markdown, one per line, with the
// preview and the result indented.
func Text(v View, lang string) string {
	if v.Redacted {
		return redactedText(v, lang)
	}
	l := labelsFor(lang)
	var b strings.Builder
	if v.Final {
		fmt.Fprintf(&b, "[%s] %s (%s)\n", statusWords(v), v.Tool, riskOf(v))
	} else {
		fmt.Fprintf(&b, "[%s] %s: %s\n", riskOf(v), v.Title, v.Tool)
	}
	if v.Summary != "" && len(v.Calls) <= 1 { // a batch lists its calls below
		b.WriteString(strings.TrimSpace(v.Summary) + "\n")
	}
	if len(v.Calls) > 1 {
		fmt.Fprintf(&b, "%s: %s%s\n", l.tool, v.Tool, fmt.Sprintf(l.batchOf, len(v.Calls)))
		for i, c := range v.Calls {
			fmt.Fprintf(&b, "  %d. %s", i+1, c.Tool)
			if c.Summary != "" {
				b.WriteString(": " + clip.FirstLine(c.Summary))
			}
			b.WriteString("\n")
		}
	}
	if v.Reason != "" && !v.Final {
		fmt.Fprintf(&b, "%s: %s\n", l.reason, v.Reason)
	}
	if v.About != "" && !v.Final {
		fmt.Fprintf(&b, "%s: %s\n", l.about, v.About)
	}
	if v.Preview != "" {
		b.WriteString(indent(v.Preview))
	}
	if v.Final {
		fmt.Fprintf(&b, "%s: %s\n", l.requester, v.requesterShown())
		if v.DecidedBy != "" {
			fmt.Fprintf(&b, "%s: %s\n", l.decidedBy, v.DecidedBy)
		}
		if v.Comment != "" {
			fmt.Fprintf(&b, "%s: %s\n", l.comment, v.Comment)
		}
		if d := DeclinedLine(v, lang); d != "" {
			b.WriteString(d + "\n")
		}
		for _, e := range EditedLines(v, lang) {
			b.WriteString(e + "\n")
		}
	} else {
		fmt.Fprintf(&b, "%s\n", requestedLine(v, v.requesterShown(), lang))
		fmt.Fprintf(&b, "%s: %s\n", l.approvers, v.Approvers)
		if v.Escalated != "" {
			b.WriteString(v.Escalated + "\n")
		}
	}
	if v.Progress != "" {
		b.WriteString(v.Progress + "\n")
	}
	if v.ShortHash != "" {
		fmt.Fprintf(&b, "%s: %s\n", l.hash, v.ShortHash)
	}
	if v.Code != "" && !v.Final {
		fmt.Fprintf(&b, "%s: %s\n", words.Text(words.Of(lang), words.CardCode), v.Code)
	}
	if v.Final {
		if v.Result != "" {
			fmt.Fprintf(&b, "%s:\n%s", l.resultOf(v), indent(v.Result))
		}
	} else if v.WaitsIn != "" {
		b.WriteString(WaitsInLine(v, lang) + "\n")
	} else if v.Answer != nil {
		b.WriteString(QuestionTyped(v, lang) + "\n")
	} else {
		b.WriteString(l.howText + "\n")
		if v.ApproveAlways != nil {
			b.WriteString(v.AlwaysHow + "\n")
		}
	}
	return b.String()
}

// riskOf is the view's risk in words, or (a view built by hand) its
// level.
func riskOf(v View) string {
	if v.RiskText != "" {
		return v.RiskText
	}
	return v.Risk.String()
}

// labels are the field names of one language. batchOf is a format: the
// number of calls.
type labels struct {
	tool, batchOf, reason, about, requester, approvers, expires, hash, decidedBy, comment string
	result, details                                                                       string
	howMD, howText                                                                        string
}

// labelsFor returns the labels of lang, from the catalogue of package
// words.
func labelsFor(lang string) labels {
	l := words.Of(lang)
	return labels{
		tool: words.Text(l, words.CardTool), batchOf: words.Text(l, words.CardBatchOf), reason: words.Text(l, words.CardReason),
		about:     words.Text(l, words.CardAbout),
		requester: words.Text(l, words.CardRequester), approvers: words.Text(l, words.CardApprovers),
		expires: words.Text(l, words.CardExpires), hash: words.Text(l, words.CardHash), decidedBy: words.Text(l, words.CardDecidedBy),
		comment: words.Text(l, words.CardComment), result: words.Text(l, words.CardResult), details: words.Text(l, words.CardDetails),
		howMD: words.Text(l, words.CardHowMD), howText: words.Text(l, words.CardHowText),
	}
}

// resultOf names what follows a final view's status sentence: the result
// of the tools, or for a frozen view the details of why it froze (the
// sentence already says that the result is unknown).
func (l labels) resultOf(v View) string {
	if v.Status == approval.StatusFrozen {
		return l.details
	}
	return l.result
}

// statusWords is the status text of a final view, or its status name.
func statusWords(v View) string {
	if v.StatusText != "" {
		return v.StatusText
	}
	return string(v.Status)
}

func riskMark(r approval.Risk) string {
	switch r {
	case approval.RiskHigh:
		return "🔴"
	case approval.RiskMedium:
		return "🟠"
	}
	return "🟢"
}

func statusMark(s approval.Status) string {
	switch s {
	case approval.StatusExecuted, approval.StatusReplayed:
		return "✅"
	case approval.StatusRejected:
		return "❌"
	case approval.StatusCancelled:
		return "⛔"
	case approval.StatusExpired:
		return "⌛"
	case approval.StatusSuperseded:
		return "↪️"
	case approval.StatusFrozen:
		return "🧊"
	case approval.StatusFailed:
		return "⚠️"
	}
	return "ℹ️"
}

// formatTime shows a time to the second in zone (nil: UTC), naming the
// zone: every replica renders the same card, whatever its local zone.
func formatTime(t time.Time, zone *time.Location) string {
	if zone == nil {
		zone = time.UTC
	}
	return t.In(zone).Format("2006-01-02 15:04:05 MST")
}

// escapeMD escapes the Markdown characters that could turn inline text into
// a link, an image, HTML, emphasis or code, and folds line breaks.
func escapeMD(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '#', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// codeSpan makes s safe inside a single-backtick code span.
func codeSpan(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ", "\r", " ").Replace(s)
}

// fenced puts s in a code block whose fence is longer than any run of
// backticks in s, so s cannot close it.
func fenced(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + "\n" + strings.TrimRight(s, "\n") + "\n" + fence + "\n"
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}
