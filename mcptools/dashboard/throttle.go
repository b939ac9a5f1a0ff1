package dashboard

// The throttle on failed sign-ins: token buckets per remote address and
// for all (signin_test.go tests it through the sign-in). Its own bucket,
// not golang.org/x/time/rate's Limiter: an attempt takes a token before
// the secret is checked, so that parallel guesses cannot outrun the
// count, and a good sign-in gives it back — a Limiter cannot take back a
// reservation once it has acted.

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// throttle limits failed sign-ins with token buckets: one per remote
// address (an IPv6 address by its /64) and one for all addresses. An
// attempt takes a token from both, and a good sign-in gives it back, so
// only failures spend them; while either bucket is empty Take refuses an
// attempt (the dashboard answers 429 with Retry-After, its secret not
// checked at all, so that guessing faster learns nothing). One address that guesses is held
// back alone; the others sign in as before, until guesses from many
// addresses at once empty the global bucket (then new sign-ins wait for
// it; signed-in browsers are not affected).
type throttle struct {
	now func() time.Time // tests set a clock

	mu  sync.Mutex
	by  map[string]*tokenBucket
	all tokenBucket
}

// throttleRate is a bucket's size and how often it gains a token.
type throttleRate struct {
	Burst float64
	Every time.Duration
}

// The buckets' rates.
var (
	perAddress   = throttleRate{Burst: 5, Every: 5 * time.Second} // 5 failures, then one each 5 s
	allAddresses = throttleRate{Burst: 20, Every: time.Second}    // 20, then one a second, from all addresses
)

// maxThrottled bounds the addresses tracked; full buckets are forgotten
// first (one that refilled is a new one).
const maxThrottled = 4096

type tokenBucket struct {
	tokens float64
	at     time.Time // when tokens was brought up to date; zero: a new, full bucket
}

// fill brings b up to now.
func (b *tokenBucket) fill(r throttleRate, now time.Time) {
	if b.at.IsZero() {
		b.tokens, b.at = r.Burst, now
		return
	}
	if now.After(b.at) {
		b.tokens = min(r.Burst, b.tokens+float64(now.Sub(b.at))/float64(r.Every))
		b.at = now
	}
}

// wait is how long until b holds a whole token (0: it does).
func (b *tokenBucket) wait(r throttleRate) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(r.Every))
}

// newThrottle returns a throttle on the clock now.
func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, by: map[string]*tokenBucket{}}
}

// Take takes a token for an attempt from addr; when it may not be made
// now, ok is false and wait says how long until it may.
func (t *throttle) Take(addr string) (wait time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	b := t.by[addr]
	if b == nil {
		t.forgetFull(now)
		b = &tokenBucket{}
		t.by[addr] = b
	}
	b.fill(perAddress, now)
	t.all.fill(allAddresses, now)
	if wait = max(b.wait(perAddress), t.all.wait(allAddresses)); wait > 0 {
		return wait, false
	}
	b.tokens--
	t.all.tokens--
	return 0, true
}

// Refund gives back the token of a good sign-in from addr.
func (t *throttle) Refund(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if b := t.by[addr]; b != nil {
		b.fill(perAddress, now)
		b.tokens = min(perAddress.Burst, b.tokens+1)
	}
	t.all.fill(allAddresses, now)
	t.all.tokens = min(allAddresses.Burst, t.all.tokens+1)
}

// forgetFull makes room for an address when maxThrottled are tracked:
// the full buckets go, and if none is full, any one.
func (t *throttle) forgetFull(now time.Time) {
	if len(t.by) < maxThrottled {
		return
	}
	for k, b := range t.by {
		if b.fill(perAddress, now); b.tokens >= perAddress.Burst {
			delete(t.by, k)
		}
	}
	for k := range t.by {
		if len(t.by) < maxThrottled {
			break
		}
		delete(t.by, k)
	}
}

// remoteKey is the address a request came from, as the throttle counts
// it: an IPv4 address, or an IPv6 address's /64.
func remoteKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}
