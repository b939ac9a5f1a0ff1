package httpserve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// The limits of the HTTP transport: timeouts of the connections, request
// bodies (size, and bytes held at once), and stateful MCP sessions (count
// and idle time).

// Defaults of the HTTP limits.
const (
	DefaultHTTPMaxSessions  = 1000
	DefaultHTTPSessionIdle  = time.Hour
	DefaultHTTPReadTimeout  = time.Minute
	DefaultHTTPWriteTimeout = time.Minute
	DefaultHTTPIdleTimeout  = 30 * time.Second
)

// Server returns the http.Server of h, whose limits are:
//   - the request headers within 10 s, the whole request, body included,
//     within ReadTimeout (default 1 min); net/http lifts that deadline once
//     the body is in, so a long tool call or an SSE stream goes on;
//   - each write within WriteTimeout (default 1 min): /mcp renews it before
//     each write of a stream, so that only a client that stops reading is
//     cut, never a stream that is quiet;
//   - a keep-alive connection closed after IdleTimeout (default 30 s)
//     without a request.
func (h *HTTPHandler) Server() *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       orDefault(h.o.ReadTimeout, DefaultHTTPReadTimeout),
		WriteTimeout:      orDefault(h.o.WriteTimeout, DefaultHTTPWriteTimeout),
		IdleTimeout:       orDefault(h.o.IdleTimeout, DefaultHTTPIdleTimeout),
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// deadlineWriter renews the connection's write deadline before each write
// or flush: a stream may be quiet for minutes, but a write must go out
// within the timeout.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func newDeadlineWriter(w http.ResponseWriter, timeout time.Duration) *deadlineWriter {
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: orDefault(timeout, DefaultHTTPWriteTimeout)}
	dw.renew()
	return dw
}

func (w *deadlineWriter) renew() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.renew()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() { _ = w.FlushError() }

func (w *deadlineWriter) FlushError() error {
	w.renew()
	return w.rc.Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// byteBudget counts the bytes of request bodies held at once.
type byteBudget struct {
	mu    sync.Mutex
	used  int64
	limit int64
}

func (b *byteBudget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// readBody reads r's body into memory, within MaxBodyBytes (413 beyond)
// and the bytes of bodies held at once (503 beyond, with Retry-After), and
// puts it back for the SDK. The bytes stay counted until release is
// called, at the end of the request. On a refusal it has answered, counts
// nothing, and returns false.
func (h *HTTPHandler) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	var held int64
	release = func() { h.bodies.release(held) }
	defer func() {
		if !ok {
			release()
		}
	}()
	if r.Body == nil || r.Body == http.NoBody {
		return nil, release, true
	}
	limit := h.o.MaxBodyBytes
	tooLarge := func() {
		http.Error(w, fmt.Sprintf("request body over %d bytes (--max-frame-bytes)", limit), http.StatusRequestEntityTooLarge)
	}
	if r.ContentLength > limit {
		tooLarge()
		return nil, release, false
	}
	reserve := func(n int64) bool {
		if !h.bodies.acquire(n) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("the server holds %d bytes of request bodies at once, the most it takes; retry shortly", h.o.MaxBodyBytesInFlight), http.StatusServiceUnavailable)
			return false
		}
		held += n
		return true
	}
	size := int64(32 << 10) // a body of unknown length grows from there
	if r.ContentLength >= 0 {
		size = r.ContentLength + 1 // and the EOF
	}
	size = min(size, limit+1)
	if !reserve(size) {
		return nil, release, false
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			next := min(2*int64(cap(buf)), limit+1)
			if !reserve(next - int64(cap(buf))) {
				return nil, release, false
			}
			buf = append(make([]byte, 0, next), buf...)
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			tooLarge()
			return nil, release, false
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusRequestTimeout)
			return nil, release, false
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(buf))
	return buf, release, true
}

// openSession serves a POST without Mcp-Session-Id to the stateful handler
// (the initialize of a session) within the caps on stateful sessions
// (503 beyond), and records the session it opens as user's.
func (h *HTTPHandler) openSession(w http.ResponseWriter, r *http.Request, info *auth.TokenInfo) {
	user := ""
	if info != nil {
		user = info.UserID
	}
	if msg := h.admitSession(user); msg != "" {
		w.Header().Set("Retry-After", "60")
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	id := ""
	defer func() {
		h.mu.Lock()
		h.opening[user]--
		if h.opening[user] == 0 {
			delete(h.opening, user)
		}
		if id != "" {
			h.mcpSess[id] = user
		}
		h.mu.Unlock()
		// Revoked while it opened: Revoke did not see it.
		if id != "" && info != nil && h.revoked(info) {
			var wg sync.WaitGroup
			h.closeSessions(&wg, map[string]bool{id: true})
			wg.Wait()
		}
	}()
	h.stateful.ServeHTTP(w, r)
	id = w.Header().Get("Mcp-Session-Id")
}

// admitSession counts the live stateful sessions and those being opened,
// and reserves a place for one more of user's; it returns why not when
// there is none.
func (h *HTTPHandler) admitSession(user string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	live := map[string]bool{}
	for ss := range h.srv.Sessions() {
		live[ss.ID()] = true
	}
	total, mine := 0, 0
	for id, u := range h.mcpSess {
		if !live[id] {
			delete(h.mcpSess, id) // closed: by its client, idle, or revoked
			continue
		}
		total++
		if u == user {
			mine++
		}
	}
	for u, n := range h.opening {
		total += n
		if u == user {
			mine += n
		}
	}
	const mend = "close one (an HTTP DELETE with its Mcp-Session-Id) or wait for idle ones to expire (--http-session-idle)"
	if total >= h.o.MaxSessions {
		return fmt.Sprintf("this server holds %d MCP sessions, the most it allows (--http-max-sessions): %s", total, mend)
	}
	if user != "" && mine >= h.o.UserMaxSessions {
		return fmt.Sprintf("user %s holds %d MCP sessions, the most a user may (a tenth of --http-max-sessions, at least 10): %s", user, mine, mend)
	}
	h.opening[user]++
	return ""
}
