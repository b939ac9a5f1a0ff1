// Package weborigin computes the origin of a URL, as browsers send it in
// an Origin header: the MCP HTTP transport and the dashboard both check
// requests against their own.
package weborigin

import (
	"net/url"
	"strings"
)

// Of is the origin of an http or https URL (scheme://host[:port],
// lowercase, without a default port), or "" when it has none (such as
// "null").
func Of(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return ""
	}
	host := strings.ToLower(u.Host)
	if u.Scheme == "http" {
		host = strings.TrimSuffix(host, ":80")
	} else {
		host = strings.TrimSuffix(host, ":443")
	}
	return u.Scheme + "://" + host
}
