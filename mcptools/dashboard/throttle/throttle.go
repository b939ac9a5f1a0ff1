// Package throttle limits the dashboard's failed sign-ins with token
// buckets, per remote address and for all (see Throttle). It knows
// addresses and clocks, nothing of sign-ins or pages; the dashboard's
// signin_test.go tests it through the sign-in.
package throttle

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Throttle limits failed sign-ins with token buckets: one per remote
// address (an IPv6 address by its /64) and one for all addresses. An
// attempt takes a token from both, and a good sign-in gives it back, so
// only failures spend them; while either bucket is empty Take refuses an
// attempt (the dashboard answers 429 with Retry-After, its secret not
// checked at all, so that guessing faster learns nothing). One address that guesses is held
// back alone; the others sign in as before, until guesses from many
// addresses at once empty the global bucket (then new sign-ins wait for
// it; signed-in browsers are not affected).
type Throttle struct {
	now func() time.Time // tests set a clock

	mu  sync.Mutex
	by  map[string]*tokenBucket
	all tokenBucket
}

// Rate is a bucket's size and how often it gains a token.
type Rate struct {
	Burst float64
	Every time.Duration
}

// The buckets' rates.
var (
	PerAddress   = Rate{Burst: 5, Every: 5 * time.Second} // 5 failures, then one each 5 s
	AllAddresses = Rate{Burst: 20, Every: time.Second}    // 20, then one a second, from all addresses
)

// maxThrottled bounds the addresses tracked; full buckets are forgotten
// first (one that refilled is a new one).
const maxThrottled = 4096

type tokenBucket struct {
	tokens float64
	at     time.Time // when tokens was brought up to date; zero: a new, full bucket
}

// fill brings b up to now.
func (b *tokenBucket) fill(r Rate, now time.Time) {
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
func (b *tokenBucket) wait(r Rate) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(r.Every))
}

// New returns a throttle on the clock now.
func New(now func() time.Time) *Throttle {
	return &Throttle{now: now, by: map[string]*tokenBucket{}}
}

// Take takes a token for an attempt from addr; when it may not be made
// now, ok is false and wait says how long until it may.
func (t *Throttle) Take(addr string) (wait time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	b := t.by[addr]
	if b == nil {
		t.forgetFull(now)
		b = &tokenBucket{}
		t.by[addr] = b
	}
	b.fill(PerAddress, now)
	t.all.fill(AllAddresses, now)
	if wait = max(b.wait(PerAddress), t.all.wait(AllAddresses)); wait > 0 {
		return wait, false
	}
	b.tokens--
	t.all.tokens--
	return 0, true
}

// Refund gives back the token of a good sign-in from addr.
func (t *Throttle) Refund(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if b := t.by[addr]; b != nil {
		b.fill(PerAddress, now)
		b.tokens = min(PerAddress.Burst, b.tokens+1)
	}
	t.all.fill(AllAddresses, now)
	t.all.tokens = min(AllAddresses.Burst, t.all.tokens+1)
}

// forgetFull makes room for an address when maxThrottled are tracked:
// the full buckets go, and if none is full, any one.
func (t *Throttle) forgetFull(now time.Time) {
	if len(t.by) < maxThrottled {
		return
	}
	for k, b := range t.by {
		if b.fill(PerAddress, now); b.tokens >= PerAddress.Burst {
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

// RemoteKey is the address a request came from, as the throttle counts
// it: an IPv4 address, or an IPv6 address's /64.
func RemoteKey(r *http.Request) string {
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
