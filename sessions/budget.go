package sessions

// Budget is what the session may spend, in USD: its maxBudgetUsd, else the
// server's per-session ceiling; 0 for none. (The dashboard draws the cost
// against it.)
func (s *Session) Budget() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budgetLocked()
}
