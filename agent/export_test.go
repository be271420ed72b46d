package agent

// Owned reports how many approvals turns of l still hold as their own
// (Loop.owned): none once they have ended.
func (l *Loop) Owned() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.owned)
}
