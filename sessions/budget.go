package sessions

// The manager's side of package quota: what it counts and spends for the
// budgets, --user-max-live and the open sessions' caps (Open, adopt).

// newQuota is the quotas of cfg.
func newQuota(cfg Config) quotaLimits {
	return quotaLimits{MaxSessions: cfg.MaxSessions, UserMaxSessions: cfg.UserMaxSessions, UserMaxLive: cfg.UserMaxLive,
		MaxSessionBudgetUSD: cfg.MaxSessionBudgetUSD, UserMaxBudgetUSD: cfg.UserMaxBudgetUSD, MaxTotalBudgetUSD: cfg.MaxTotalBudgetUSD,
		ErrTooMany: ErrTooMany, ErrBudget: ErrBudget}
}

// budgetLocked is the session's budget (see quotaLimits.SessionBudget);
// s.mu is held.
func (s *Session) budgetLocked() float64 { return s.m.quota.SessionBudget(s.opts.MaxBudgetUSD) }

// checkBudget refuses a turn when the server's, the owner's or the
// session's budget is spent.
func (s *Session) checkBudget() error {
	s.mu.Lock()
	owner, cost, budget := s.opts.Owner, s.cost, s.budgetLocked()
	s.mu.Unlock()
	return s.m.quota.CheckTurn(s.m.Spent, owner, s.m.share.UserSpent, s.ID, cost, budget)
}

// Spent is what every turn has cost so far, closed sessions included.
func (m *Manager) Spent() float64 { return m.share.Spent() }

// Budget is what the session may spend, in USD: its maxBudgetUsd, else the
// server's per-session ceiling; 0 for none. (The dashboard draws the cost
// against it.)
func (s *Session) Budget() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budgetLocked()
}
