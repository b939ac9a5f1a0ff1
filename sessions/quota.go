// quotaLimits holds the server's limits on what sessions may hold and
// spend, and says when one is reached: open sessions (--max-sessions,
// --user-max-sessions), live processes per user (--user-max-live), and
// budgets — a session's (its maxBudgetUsd, else --max-session-budget-usd),
// a user's (--user-max-budget-usd) and the server's
// (--max-total-budget-usd), counted from the costs the CLI reports.

package sessions

import (
	"fmt"
	"math"
	"strconv"
)

// quotaLimits are the quotas; 0 means none.
type quotaLimits struct {
	MaxSessions, UserMaxSessions, UserMaxLive                int
	MaxSessionBudgetUSD, UserMaxBudgetUSD, MaxTotalBudgetUSD float64
	// ErrTooMany and ErrBudget are what the refusals wrap.
	ErrTooMany, ErrBudget error
}

// usd renders an amount of dollars with the digits that matter.
func usd(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// cents rounds an amount to a millionth of a dollar for a text.
func cents(v float64) string { return usd(math.Round(v*1e6) / 1e6) }

// SessionBudget is a session's budget: its own (maxBudgetUsd), else the
// server's per-session ceiling; 0 for none.
func (l quotaLimits) SessionBudget(own float64) float64 {
	if own > 0 {
		return own
	}
	return l.MaxSessionBudgetUSD
}

// CheckTurn refuses a turn once all sessions together have spent
// --max-total-budget-usd (total), the owner's sessions
// --user-max-budget-usd (userSpent asks what they spent; each is asked
// only when its cap is set), or session id
// its budget (cost of budget).
func (l quotaLimits) CheckTurn(total func() float64, owner string, userSpent func(string) float64, id string, cost, budget float64) error {
	if limit := l.MaxTotalBudgetUSD; limit > 0 {
		if spent := total(); spent >= limit {
			return fmt.Errorf("%w: all sessions together have cost $%s, and this server allows $%s in all (--max-total-budget-usd); no new turns run until the operator raises it", l.ErrBudget, cents(spent), usd(limit))
		}
	}
	if limit := l.UserMaxBudgetUSD; owner != "" && limit > 0 {
		if spent := userSpent(owner); spent >= limit {
			return fmt.Errorf("%w: the sessions of user %s have cost $%s, and this server allows a user $%s (--user-max-budget-usd)", l.ErrBudget, owner, cents(spent), usd(limit))
		}
	}
	if budget > 0 && cost >= budget {
		return fmt.Errorf("%w: session %s has cost $%s of its $%s budget (maxBudgetUsd); create a new session to go on", l.ErrBudget, id, cents(cost), usd(budget))
	}
	return nil
}

// CheckOpen refuses one more open session: open are open already, and
// the owner's ("" for none) count asks how many of them are the owner's
// (called only when --user-max-sessions applies). adopting names a
// session taken up from the store ("" for a new one).
func (l quotaLimits) CheckOpen(open int, owner string, count func() int, adopting string) error {
	if open >= l.MaxSessions {
		if adopting != "" {
			return fmt.Errorf("%w: session %s is in the session store, but %d sessions are open on this instance and --max-sessions is %d", l.ErrTooMany, adopting, open, l.MaxSessions)
		}
		return fmt.Errorf("%w: %d sessions are open and --max-sessions is %d", l.ErrTooMany, open, l.MaxSessions)
	}
	limit := l.UserMaxSessions
	if limit <= 0 || owner == "" {
		return nil
	}
	if n := count(); n >= limit {
		if adopting != "" {
			return fmt.Errorf("%w: session %s is in the session store, but user %s has %d other open sessions and this server allows a user %d (--user-max-sessions); close one first", l.ErrTooMany, adopting, owner, n, limit)
		}
		return fmt.Errorf("%w: user %s has %d open sessions and this server allows a user %d (--user-max-sessions); close one first", l.ErrTooMany, owner, n, limit)
	}
	return nil
}
