package dashboard_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-agent-mcp/claude-agent-mcp/mcptools/dashboard"
	"github.com/claude-agent-mcp/claude-agent-mcp/sessions"
)

// TestDashboardCookieStaysOnItsListener: the stdio sign-in cookie is not
// sent to another web server on 127.0.0.1 that the browser visits (a
// browser keys cookies by host, not port, as the cookie jar here does):
// its path is the dashboard's random root, under which the other server
// has no page to visit. A cookie that other server sets does not undo the
// sign-in, and a page outside the root is refused with the cookie.
func TestDashboardCookieStaysOnItsListener(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	sid := e.create(t, nil)
	var mu sync.Mutex
	var got []string // the cookies the other server received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for _, c := range r.Cookies() {
			got = append(got, r.URL.Path+": "+c.Name+"="+c.Value)
		}
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: dashboard.CookieName, Value: "tossed", Path: "/"})
	}))
	t.Cleanup(other.Close)
	c := browser(t)
	e.signIn(t, c)
	u, _ := url.Parse(e.ui + "/")
	var mine string
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == dashboard.CookieName {
			mine = ck.Value
		}
	}
	if mine == "" {
		t.Fatal("no sign-in cookie for the pages")
	}
	if len(strings.TrimPrefix(e.d.Root(), dashboard.UIPrefix+"/")) < 22 {
		t.Errorf("root %q, want /ui/ and 128 random bits", e.d.Root())
	}
	// The other server's pages, the dashboard's own paths among them, and
	// one that starts like the root.
	for _, path := range []string{"/", "/ui", "/ui/", "/ui/s/" + sid, "/ui/static/app.js", e.d.Root() + "x/"} {
		if code, _, _ := get(t, c, other.URL+path); code != http.StatusOK {
			t.Fatalf("the other server: %d", code)
		}
	}
	mu.Lock()
	for _, g := range got {
		if strings.Contains(g, mine) {
			t.Errorf("another server on 127.0.0.1 got the sign-in cookie: %s", g)
		}
	}
	mu.Unlock()
	if code, _, body := get(t, c, e.ui+"/s/"+sid); code != http.StatusOK || !strings.Contains(body, sid) {
		t.Errorf("the session page beside the other server's cookie: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, e.url+"/ui/", nil)
	req.AddCookie(&http.Cookie{Name: dashboard.CookieName, Value: mine})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a page outside the root, with the cookie: %d, want 403", resp.StatusCode)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestDashboardSigninThrottle: failed sign-ins beyond a small burst from
// one address (an IPv6 /64) are answered 429 with Retry-After, without a
// look at the token, the right one included; other addresses sign in
// meanwhile; after Retry-After the address is heard again. Good sign-ins
// spend nothing. Failures from many addresses at once empty the global
// bucket. The clock is the test's.
func TestDashboardSigninThrottle(t *testing.T) {
	e := newDashHTTP(t, sessions.Config{})
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	e.d.SetClock(clock.Now)
	signIn := func(addr, token string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, e.base+"/ui/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.base)
		req.RemoteAddr = net.JoinHostPort(addr, "40000")
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		return rec
	}
	for i := range int(dashboard.PerAddressBurst) {
		if rec := signIn("192.0.2.1", "guess"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i, rec.Code)
		}
	}
	var wait int
	for _, token := range []string{"guess", "alice-secret"} {
		rec := signIn("192.0.2.1", token)
		wait, _ = strconv.Atoi(rec.Header().Get("Retry-After"))
		if rec.Code != http.StatusTooManyRequests || wait < 1 || rec.Header().Get("Set-Cookie") != "" || !strings.Contains(rec.Body.String(), "Too many failed sign-ins") {
			t.Errorf("%s after the burst: %d, Retry-After %q, cookie %q", token, rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Set-Cookie"))
		}
	}
	if rec := signIn("192.0.2.2", "alice-secret"); rec.Code != http.StatusSeeOther {
		t.Errorf("alice from another address: %d, want signed in", rec.Code)
	}
	if rec := signIn("192.0.2.3", "guess"); rec.Code != http.StatusUnauthorized {
		t.Errorf("another address's first failure: %d, want 401", rec.Code)
	}
	clock.Add(time.Duration(wait) * time.Second)
	if rec := signIn("192.0.2.1", "guess"); rec.Code != http.StatusUnauthorized {
		t.Errorf("after Retry-After: %d, want the token checked (401)", rec.Code)
	}
	if rec := signIn("192.0.2.1", "guess"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the next failure at once: %d, want 429", rec.Code)
	}
	// One /64 is one address.
	for i := range int(dashboard.PerAddressBurst) {
		signIn("2001:db8::"+strconv.Itoa(i+1), "guess")
	}
	if rec := signIn("2001:db8::ff", "guess"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("another address of the same /64: %d, want 429", rec.Code)
	}

	// Good sign-ins spend nothing.
	e.d.SetClock(clock.Now)
	for i := range int(dashboard.AllAddressBurst) + 5 {
		if rec := signIn("192.0.2.9", "bob-secret"); rec.Code != http.StatusSeeOther {
			t.Fatalf("good sign-in %d: %d", i, rec.Code)
		}
	}
	// Failures from many addresses empty the global bucket.
	for i := range int(dashboard.AllAddressBurst) {
		if rec := signIn("198.51.100."+strconv.Itoa(i+1), "guess"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("address %d's failure: %d", i, rec.Code)
		}
	}
	if rec := signIn("203.0.113.1", "guess"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a new address once the global bucket is empty: %d, want 429", rec.Code)
	}
	clock.Add(dashboard.AllAddressEvery)
	if rec := signIn("203.0.113.1", "guess"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a second later: %d, want one more checked", rec.Code)
	}
}

// TestDashboardSecretThrottle: on stdio, wrong secrets beyond the burst
// are answered 429 with Retry-After, the right one too (not checked);
// after Retry-After the link signs in.
func TestDashboardSecretThrottle(t *testing.T) {
	e := newDashEnv(t, "2025-11-25", nil)
	clock := &fakeClock{now: time.Unix(1_000_000, 0)}
	e.d.SetClock(clock.Now)
	c := browser(t)
	for i := range int(dashboard.PerAddressBurst) {
		if code, _, _ := get(t, c, e.ui+"/?secret=wrong"); code != http.StatusForbidden {
			t.Fatalf("wrong secret %d: %d, want 403", i, code)
		}
	}
	var wait int
	for _, secret := range []string{"wrong", e.d.Secret()} {
		code, hdr, _ := get(t, c, e.ui+"/?secret="+secret)
		wait, _ = strconv.Atoi(hdr.Get("Retry-After"))
		if code != http.StatusTooManyRequests || wait < 1 || hdr.Get("Set-Cookie") != "" {
			t.Errorf("after the burst: %d, Retry-After %q, cookie %q", code, hdr.Get("Retry-After"), hdr.Get("Set-Cookie"))
		}
	}
	clock.Add(time.Duration(wait) * time.Second)
	e.signIn(t, c)
}
