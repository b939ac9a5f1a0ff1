package sessions

import (
	"fmt"
	"math"
	"strconv"
)

// Budgets: a session's (its maxBudgetUsd, else --max-session-budget-usd),
// a user's (--user-max-budget-usd) and the server's
// (--max-total-budget-usd), counted from the costs the CLI reports.

// usd renders an amount of dollars with the digits that matter.
func usd(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// budgetLocked is the session's budget: its maxBudgetUsd, else the
// server's per-session ceiling; 0 for none. s.mu is held.
func (s *Session) budgetLocked() float64 {
	if s.opts.MaxBudgetUSD > 0 {
		return s.opts.MaxBudgetUSD
	}
	return s.m.cfg.MaxSessionBudgetUSD
}

// checkBudget refuses a turn when the session's budget or the server's
// total budget is spent.
func (s *Session) checkBudget() error {
	if err := s.m.checkTotalBudget(); err != nil {
		return err
	}
	if err := s.m.checkUserBudget(s.opts.Owner); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if budget := s.budgetLocked(); budget > 0 && s.cost >= budget {
		return fmt.Errorf("%w: session %s has cost $%s of its $%s budget (maxBudgetUsd); create a new session to go on", ErrBudget, s.ID, usd(math.Round(s.cost*1e6)/1e6), usd(budget))
	}
	return nil
}

// Spent is what every turn has cost so far, closed sessions included.
func (m *Manager) Spent() float64 { return m.share.Spent() }

// checkUserBudget refuses a turn once a user's sessions together have spent
// --user-max-budget-usd.
func (m *Manager) checkUserBudget(owner string) error {
	limit := m.cfg.UserMaxBudgetUSD
	if owner == "" || limit <= 0 {
		return nil
	}
	spent := m.share.UserSpent(owner)
	if spent >= limit {
		return fmt.Errorf("%w: the sessions of user %s have cost $%s, and this server allows a user $%s (--user-max-budget-usd)", ErrBudget, owner, usd(math.Round(spent*1e6)/1e6), usd(limit))
	}
	return nil
}

// checkTotalBudget refuses a turn once all sessions together have spent
// --max-total-budget-usd.
func (m *Manager) checkTotalBudget() error {
	limit := m.cfg.MaxTotalBudgetUSD
	if spent := m.Spent(); limit > 0 && spent >= limit {
		return fmt.Errorf("%w: all sessions together have cost $%s, and this server allows $%s in all (--max-total-budget-usd); no new turns run until the operator raises it", ErrBudget, usd(math.Round(spent*1e6)/1e6), usd(limit))
	}
	return nil
}

// Budget is what the session may spend, in USD: its maxBudgetUsd, else the
// server's per-session ceiling; 0 for none. (The dashboard draws the cost
// against it.)
func (s *Session) Budget() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.budgetLocked()
}
