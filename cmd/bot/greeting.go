package main

import (
	"fmt"
	"strings"

	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
	"github.com/hitlbot/hitlbot/words"
)

// demoExample is a request that works with the demo database, and the
// sentence that says what it does.
type demoExample struct {
	request string
	what    words.Key
}

// demoExamples are the requests the greeting suggests: a read that runs
// at once, a read-only query, and a delete that asks first (the README's
// walk through the demo). They are commands, the same in every language.
var demoExamples = []demoExample{
	{"list tasks", words.GreetListTasks},
	{"/sql SELECT status, count(*) FROM orders GROUP BY status", words.GreetQuery},
	{"/sql DELETE FROM orders WHERE status = 'cancelled'", words.GreetDelete},
}

// tryExample is the one example the ready line of serve suggests: the
// delete, which shows the approval.
var tryExample = demoExamples[2]

// demoOn reports whether cfg runs the demo as the examples expect: the SQL
// tools on the demo database, the task tools, and a policy that asks
// before sql_execute runs.
func demoOn(cfg *config.Config) bool {
	pol := cfg.Approval.Policy
	return len(cfg.Tools.SQL.Databases) == 0 && cfg.Tools.Tasks.Enabled &&
		pol.Enabled && pol.Tools["sql_execute"].Confirm != "never"
}

// greeting is what `bot chat` prints before its first prompt, in lang:
// what the bot does, and with the demo the requests to try.
func greeting(lang words.Lang, demo bool) string {
	var b strings.Builder
	b.WriteString(words.Text(lang, words.GreetIntro))
	if demo {
		fmt.Fprintf(&b, "\n%s", words.Text(lang, words.GreetDemo))
		for _, e := range demoExamples {
			fmt.Fprintf(&b, "\n  %s  — %s", e.request, words.Text(lang, e.what))
		}
	}
	return b.String()
}

// webGreeting is the same greeting for the web chat page, which shows it
// when it opens: the page draws each example as a button that puts the
// request in its input.
func webGreeting(lang words.Lang, demo bool) web.Greeting {
	g := web.Greeting{Text: words.Text(lang, words.GreetIntro)}
	if demo {
		g.Text += "\n" + words.Text(lang, words.GreetDemo)
		for _, e := range demoExamples {
			g.Examples = append(g.Examples, web.Example{Request: e.request, What: words.Text(lang, e.what)})
		}
	}
	return g
}
