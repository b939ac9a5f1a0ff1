package dashboard

import (
	"time"
)

// Hooks for the tests of package dashboard_test, which drive a dashboard
// through the MCP server (mcptools imports this package, so those tests
// cannot be in it).

const (
	CookieName = cookieName
	UIPrefix   = uiPrefix
)

// UIStep is a step of a turn as a page shows it.
type UIStep = uiStep

// Subscriber is a page's event stream.
type Subscriber = subscriber

func (d *Dashboard) SetBaseURL(u string)                 { d.o.BaseURL = u }
func (d *Dashboard) Root() string                        { return d.root }
func (d *Dashboard) Secret() string                      { return d.secret }
func (d *Dashboard) SetMaxSteps(n int)                   { d.maxSteps = n }
func (d *Dashboard) MaxSignins() int                     { return d.maxSignins }
func (d *Dashboard) SetMaxSignins(n int)                 { d.maxSignins = n }
func (d *Dashboard) Questions(id string) []shownQuestion { return d.questions(id) }
func (d *Dashboard) Watched(id, owner string) bool       { return d.watched(id, owner) }
func (d *Dashboard) Unsubscribe(sub *Subscriber)         { d.unsubscribe(sub) }

// SetClock gives the sign-in throttle a clock of the test's.
func (d *Dashboard) SetClock(now func() time.Time) { d.throttle = newThrottle(now) }

// Subscribe opens a stream of user's: the list (session "") or a
// session's page.
func (d *Dashboard) Subscribe(user, session string) *Subscriber {
	return d.subscribe(&signin{user: user}, session, func() {})
}

// Wake is where the stream is woken.
func (s *subscriber) Wake() <-chan struct{} { return s.wake }

// SigninCounts is how many sign-ins the dashboard holds, of how many users.
func (d *Dashboard) SigninCounts() (n, users int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.signins.byID), len(d.signins.byUser)
}

// The sign-in throttle's rates.
var (
	PerAddressBurst = perAddress.Burst
	AllAddressBurst = allAddresses.Burst
	AllAddressEvery = allAddresses.Every
)
