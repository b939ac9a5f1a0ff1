package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"
)

// The 2 MB answer with a dashboard page following it: the same turn on a
// server with --ui on, once with no page open and once with a page's event
// stream reading the session as it streams (its text deltas decoded and
// sent on, see sessions.Session.FollowText). Their ratio is what a page
// costs the turn.

// bigOnUI times the 2 MB answer on the --ui server as bigServer does on
// the spares server; with page, a page follows the session meanwhile.
func (r *rig) bigOnUI(ctx context.Context, page bool) (d time.Duration, err error) {
	s := r.ui
	n := s.log.sparesReady()
	id, err := s.create(ctx)
	if err != nil {
		return 0, err
	}
	if err := s.log.waitSpares(ctx, n+1); err != nil {
		return 0, err
	}
	defer s.closeSession(ctx, id)
	if _, err := s.query(ctx, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "hi"}); err != nil {
		return 0, err
	}
	if page {
		stop, err := r.follow(ctx, id)
		if err != nil {
			return 0, err
		}
		defer func() {
			if got := stop(); got < 1<<16 && err == nil {
				err = fmt.Errorf("the page got %d bytes of the 2 MB answer's events: it did not follow the text", got)
			}
		}()
	}
	return r.serverTurn(ctx, s, "claude_chat_query", map[string]any{"sessionId": id, "prompt": "BIGTEXT"}, r.b.checkCapped)
}

// follow opens session id's page event stream on the --ui server (signed
// in with the link claude_session_list gives) and reads it until stop,
// which returns how many bytes it read.
func (r *rig) follow(ctx context.Context, id string) (stop func() int, err error) {
	var list struct {
		DashboardURL string `json:"dashboardUrl"`
	}
	if err := r.ui.call(ctx, "claude_session_list", map[string]any{}, &list); err != nil {
		return nil, err
	}
	link, err := url.Parse(list.DashboardURL)
	if err != nil || link.Host == "" {
		return nil, fmt.Errorf("the dashboard's link %q: %v", list.DashboardURL, err)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	resp, err := client.Get(list.DashboardURL) // signs in: the cookie
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	root := strings.TrimSuffix(link.Path, "/")
	events := link.Scheme + "://" + link.Host + root + "/events?session=" + url.QueryEscape(id)
	fctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(fctx, http.MethodGet, events, nil)
	resp, err = client.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("the page's event stream: %s", resp.Status)
	}
	read := make(chan int, 1)
	go func() {
		defer resp.Body.Close()
		n := 0
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		for {
			line, err := br.ReadSlice('\n')
			n += len(line)
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				read <- n
				return
			}
		}
	}()
	return func() int {
		time.Sleep(200 * time.Millisecond) // the stream's last events, after the result: not synchronisation, a grace
		cancel()
		return <-read
	}, nil
}
