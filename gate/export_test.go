package gate

// CallbacksDone waits until every callback sender g started has ended.
func CallbacksDone(g *Gate) { g.senders.Wait() }

// CallbacksSending is how many callback senders g is running.
func CallbacksSending(g *Gate) int {
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	n := 0
	for _, c := range g.sending {
		n += c
	}
	return n
}

// MatchRule is matchRule.
var MatchRule = matchRule
