package approval

// EarlyLen reports how many approvals e requested whose Wait has not begun.
func EarlyLen(e *Engine) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.early)
}
