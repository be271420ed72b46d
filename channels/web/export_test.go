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
