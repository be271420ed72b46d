package web

// Watchers reports how many sockets watch a chat (for tests).
func Watchers(w *Web, chatID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if c := w.chats[chatID]; c != nil {
		return len(c.conns)
	}
	return 0
}

// ForgetSteps makes the channel forget every step it showed, as a restart
// (or another replica) would (for tests).
func ForgetSteps(w *Web) {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.steps)
	clear(w.byApproval)
}

// StepState reports a step's state: "open", "deciding", "resolved", or ""
// when the channel does not know the step (for tests).
func StepState(w *Web, stepID string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.steps[stepID]
	if st == nil {
		return ""
	}
	return [...]string{stepOpen: "open", stepDeciding: "deciding", stepResolved: "resolved"}[st.state]
}
