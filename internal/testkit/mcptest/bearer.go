package mcptest

import "net/http"

// Bearer is an HTTP client that sends Authorization: Bearer token with
// every request, for the streamable HTTP client transport.
func Bearer(token string) *http.Client {
	return &http.Client{Transport: bearer{token, http.DefaultTransport}}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
