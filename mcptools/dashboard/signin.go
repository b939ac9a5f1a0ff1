package dashboard

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sign-ins. The stdio link's secret, or over HTTP a bearer token, makes a
// sign-in: an entry of the dashboard's memory named by an HttpOnly,
// SameSite=Strict cookie.
//
// The cookie is bound to the stdio listener by its path. A browser keys
// cookies by host, not by port, so a cookie of 127.0.0.1:PORT goes to
// every server on 127.0.0.1 the browser visits — unless its Path keeps it
// back: the browser sends a cookie only to URLs whose path lies under the
// cookie's (RFC 6265, 5.1.4). So on stdio every page is under a root made
// at each start, /ui/<22 characters: 128 random bits>, and the cookie's
// Path is that root. Another server gets the cookie only for a URL under
// the root, which it cannot name without knowing the root: nothing tells
// it (the root is in the link the server logs, and in the signed-in pages;
// a page without a sign-in never shows it; the pages send no Referer to
// other origins; the script reads it from its own page). A name with the
// port in it would not do: the browser would send it to other ports all
// the same. (__Host- cookies need https.) Over HTTP the root is /ui.
//
// Each user has a table of their own, at most maxSignins entries, their
// oldest going first: a user who signs in again and again pushes out only
// their own sign-ins (the tokens file bounds the users).
//
// Failed attempts are throttled (package throttle).

// signin is a browser signed in.
type signin struct {
	id        string // the cookie's value
	user      string
	tokenHash string    // over HTTP: the SHA-256 of the token it signed in with
	grant     *[]string // over HTTP: the classes the token grants, when fewer than --http-allow's (SignIns.Verify)
	expires   time.Time
}

const (
	signinTTL         = 12 * time.Hour
	maxSigninsPerUser = 256
)

// signinTable is the sign-ins by cookie value and by user; the
// Dashboard's mu guards it.
type signinTable struct {
	byID   map[string]*signin
	byUser map[string][]*signin // oldest first
}

func newSigninTable() signinTable {
	return signinTable{byID: map[string]*signin{}, byUser: map[string][]*signin{}}
}

// add records si: the user's expired sign-ins go, then their oldest
// beyond limit.
func (t *signinTable) add(si *signin, limit int, now time.Time) {
	var kept []*signin
	for _, old := range t.byUser[si.user] {
		if now.After(old.expires) {
			delete(t.byID, old.id)
			continue
		}
		kept = append(kept, old)
	}
	for len(kept) >= max(limit, 1) {
		delete(t.byID, kept[0].id)
		kept = kept[1:]
	}
	t.byUser[si.user] = append(kept, si)
	t.byID[si.id] = si
}

// remove forgets si.
func (t *signinTable) remove(si *signin) {
	delete(t.byID, si.id)
	list := slices.DeleteFunc(slices.Clone(t.byUser[si.user]), func(s *signin) bool { return s == si })
	if len(list) == 0 {
		delete(t.byUser, si.user)
		return
	}
	t.byUser[si.user] = list
}

// removeUsers forgets every sign-in of users.
func (t *signinTable) removeUsers(users []string) {
	for _, u := range users {
		for _, si := range t.byUser[u] {
			delete(t.byID, si.id)
		}
		delete(t.byUser, u)
	}
}

// secretSignin signs in a browser that opened the stdio link, then leaves
// the secret out of the address bar. The way on is a page of its own
// (meta refresh), not a redirect: a link followed from another site is a
// cross-site navigation, on which the browser holds back a SameSite=Strict
// cookie, redirects included.
func (d *Dashboard) secretSignin(w http.ResponseWriter, r *http.Request) {
	if d.overHTTP {
		d.refuse(w, r)
		return
	}
	addr := remoteKey(r)
	if wait, ok := d.throttle.Take(addr); !ok {
		tooMany(w, wait)
		http.Error(w, "Too many failed sign-ins: try again in "+strconv.Itoa(retrySeconds(wait))+" s.", http.StatusTooManyRequests)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("secret")), []byte(d.secret)) != 1 {
		d.refuse(w, r)
		return
	}
	d.throttle.Refund(addr)
	d.newSignin(w, "", "", nil)
	w.Header().Set("Referrer-Policy", "no-referrer") // its address holds the secret
	d.render(w, http.StatusOK, signedIn)
}

// newSignin records a sign-in and sets its cookie, whose path is the
// pages' root.
func (d *Dashboard) newSignin(w http.ResponseWriter, user, tokenHash string, grant *[]string) {
	now := time.Now()
	si := &signin{id: randomToken(), user: user, tokenHash: tokenHash, grant: grant, expires: now.Add(signinTTL)}
	d.mu.Lock()
	d.signins.add(si, d.maxSignins, now)
	d.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: si.id, Path: d.root, HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: strings.HasPrefix(d.o.BaseURL, "https://"), MaxAge: int(signinTTL / time.Second)})
}

// signedIn returns the request's sign-in, or nil. Over HTTP the token it
// was made with must still be in the tokens file. Every cookie of the name
// is tried: another server on the host may have set one too.
func (d *Dashboard) signedIn(r *http.Request) *signin {
	for _, c := range r.CookiesNamed(cookieName) {
		d.mu.Lock()
		si := d.signins.byID[c.Value]
		d.mu.Unlock()
		if si != nil && d.valid(si) {
			return si
		}
	}
	return nil
}

// valid reports whether si still stands (for a long event stream).
func (d *Dashboard) valid(si *signin) bool {
	if time.Now().After(si.expires) {
		return false
	}
	return !d.overHTTP || (d.tokens != nil && d.tokens.Holds(si.tokenHash, si.user))
}

// endSignins ends the sign-ins of users (removed from the tokens file).
func (d *Dashboard) endSignins(users []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.signins.removeUsers(users)
	for sub := range d.subs {
		if slices.Contains(users, sub.user) {
			sub.cancel()
		}
	}
}

// serveSignin: over HTTP, the form that takes a bearer token, and its
// post. A post while the throttle holds its address back is answered 429
// without a look at the token.
func (d *Dashboard) serveSignin(w http.ResponseWriter, r *http.Request) {
	if !d.overHTTP || d.tokens == nil {
		d.refuse(w, r)
		return
	}
	page := signinPage{pageBase: pageBase{Title: "Sign in"}}
	if r.Method != http.MethodPost {
		d.render(w, http.StatusOK, page.write)
		return
	}
	if !d.sameOrigin(r) {
		http.Error(w, "Forbidden: cross-origin sign-in", http.StatusForbidden)
		return
	}
	addr := remoteKey(r)
	wait, ok := d.throttle.Take(addr)
	if !ok {
		d.tokens.Failed(r, "too many failed sign-ins (dashboard sign-in, not checked)")
		tooMany(w, wait)
		page.RetryAfter = retrySeconds(wait)
		d.render(w, http.StatusTooManyRequests, page.write)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	user, grant, err := d.tokens.Verify(r.Context(), token, r)
	if err == nil {
		d.throttle.Refund(addr)
		sum := sha256.Sum256([]byte(token))
		d.newSignin(w, user, hex.EncodeToString(sum[:]), grant)
		http.Redirect(w, r, d.root+"/", http.StatusSeeOther)
		return
	}
	d.tokens.Failed(r, "unknown token (dashboard sign-in)")
	page.Failed = true
	d.render(w, http.StatusUnauthorized, page.write)
}

func (d *Dashboard) signout(w http.ResponseWriter, r *http.Request, si *signin) {
	if !d.sameOrigin(r) || !d.checkPageToken(r, si) {
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	d.mu.Lock()
	d.signins.remove(si)
	d.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: d.root, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, uiPrefix+"/signin", http.StatusSeeOther)
}

// tooMany sets Retry-After for a 429.
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(wait)))
}

// retrySeconds is wait in whole seconds, rounded up, at least 1.
func retrySeconds(wait time.Duration) int {
	return max(int((wait+time.Second-1)/time.Second), 1)
}
