package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"

	"github.com/hitlbot/hitlbot/words"
)

// Greeting is what the page shows when it opens: what the bot can do and
// requests to try (cmd/bot builds it from the catalogue, the same greeting
// `bot chat` prints).
type Greeting struct {
	// Text says what the bot can do, in the page's language.
	Text string `json:"text"`
	// Examples are requests that work as they are (with the demo); the
	// page shows each as a button that puts it in the input.
	Examples []Example `json:"examples,omitempty"`
}

// Example is one request the greeting suggests.
type Example struct {
	// Request is the text to send, the same in every language.
	Request string `json:"request"`
	// What says what it does, in the page's language.
	What string `json:"what"`
}

// pageWords are the sentences the page says itself, by the name app.js
// uses for each (placeholders in braces are the page's to fill in).
var pageWords = []struct {
	name string
	key  words.Key
}{
	{"connecting", words.WebPageConnecting},
	{"online", words.WebPageOnline},
	{"offline", words.WebPageOffline},
	{"noConnect", words.WebPageNoConnect},
	{"session", words.WebPageSession},
	{"user", words.WebPageUser},
	{"input", words.WebPageInput},
	{"inputBlocked", words.WebPageInputBlocked},
	{"send", words.WebPageSend},
	{"message", words.WebPageMessage},
	{"pendingTitle", words.WebPagePendingTitle},
	{"nonePending", words.WebPageNonePending},
	{"pendingToggle", words.WebPagePendingToggle},
	{"log", words.WebPageLog},
	{"what", words.WebPageWhat},
	{"requested", words.WebPageRequested},
	{"expired", words.WebPageExpired},
	{"details", words.WebPageDetails},
	{"args", words.WebPageArgs},
	{"comment", words.WebPageComment},
	{"approve", words.WebPageApprove},
	{"reject", words.WebPageReject},
	{"keys", words.WebPageKeys},
	{"keysHigh", words.WebPageKeysHigh},
	{"running", words.WebPageRunning},
	{"cancelling", words.WebPageCancelling},
	{"notConnected", words.WebPageNotConnected},
	{"needsConfirm", words.WebPageNeedsConfirm},
	{"outcome", words.WebPageOutcome},
	{"outcomeBy", words.WebPageOutcomeBy},
	{"resultOf", words.WebPageResultOf},
	{"failedOf", words.WebPageFailedOf},
	{"try", words.WebPageTry},
	{"you", words.WebPageYou},
	{"bot", words.WebPageBot},
	{"once", words.WebPageOnce},
	{"calls", words.WebPageCalls},
	{"edit", words.WebPageEdit},
	{"editArgs", words.WebPageEditArgs},
	{"editApprove", words.WebPageEditApprove},
	{"approveSession", words.WebPageApproveSession},
	{"editNotObject", words.WebPageEditNotObject},
	{"questionTitle", words.QuestionTitle},
	{"questionHow", words.QuestionHow},
	{"questionMulti", words.QuestionMulti},
	{"questionAnswer", words.QuestionAnswer},
	{"questionDecline", words.QuestionDecline},
	{"questionOwn", words.QuestionOwn},
	{"questionEmpty", words.QuestionEmpty},
	{"title", words.CardTitle},
	{"risk", words.CardRisk},
	{"reason", words.CardReason},
	{"about", words.CardAbout},
	{"tool", words.CardTool},
	{"approvers", words.CardApprovers},
	{"hash", words.CardHash},
	{"hashHint", words.WebPageHashHint},
	{"approversPage", words.WebPageApprovers},
	{"approversTitle", words.WebPageApproversTitle},
}

// pageData is what the page template fills in: the language, the words
// (by name) and the greeting, the last two as JSON in data attributes that
// app.js reads (no inline script: the page's CSP allows only its own
// files).
type pageData struct {
	Lang     string
	W        map[string]string
	Words    string
	Greeting string
}

// page renders index.html in the channel's language once, at New.
func page(static fs.FS, lang words.Lang, g Greeting) ([]byte, error) {
	src, err := fs.ReadFile(static, "index.html")
	if err != nil {
		return nil, err
	}
	t, err := template.New("index.html").Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("web: page template: %w", err)
	}
	w := make(map[string]string, len(pageWords))
	for _, p := range pageWords {
		w[p.name] = words.Text(lang, p.key)
	}
	wj, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	gj, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, pageData{Lang: string(lang), W: w, Words: string(wj), Greeting: string(gj)}); err != nil {
		return nil, fmt.Errorf("web: page template: %w", err)
	}
	return b.Bytes(), nil
}

// servePage answers / with the rendered page and anything else from the
// static files.
func servePage(bodies map[words.Lang][]byte, lang words.Lang, browser bool, files http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			// What a browser asks for without reading the page's link: the
			// same icon (an SVG; browsers take it by its type).
			r = r.Clone(r.Context())
			r.URL.Path = "/favicon.svg"
		}
		if r.URL.Path != "/" {
			files.ServeHTTP(rw, r)
			return
		}
		l := lang
		if browser {
			rw.Header().Set("Vary", "Accept-Language")
			if al, ok := words.Accept(r.Header.Values("Accept-Language")); ok {
				l = al
			}
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = rw.Write(bodies[l])
	})
}
