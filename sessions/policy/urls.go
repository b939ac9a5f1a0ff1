package policy

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// resolveTimeout bounds the lookup of a URL's host name.
const resolveTimeout = 2 * time.Second

// internalPrefixes are the ranges beyond netip's own predicates (loopback,
// private, link-local, unspecified, multicast) that reach no public host:
// "this network", shared address space (CGNAT), IETF protocol assignments,
// benchmarking, reserved and broadcast, IPv6 site-local.
var internalPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("fec0::/10"),
}

// embeddedV4 are IPv6 ranges whose last 32 bits are an IPv4 address that
// the packet reaches: IPv4-mapped and the NAT64 well-known prefix.
var embeddedV4 = []netip.Prefix{
	netip.MustParsePrefix("::ffff:0:0/96"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// internalAddr reports whether a is loopback, private, link-local (cloud
// metadata at 169.254.169.254), unspecified or otherwise no public host.
func internalAddr(a netip.Addr) bool {
	a = a.WithZone("")
	for _, p := range embeddedV4 {
		if p.Contains(a) {
			b := a.As16()
			a = netip.AddrFrom4([4]byte(b[12:]))
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range internalPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// internalURL reports whether raw reaches the server's own machine or its
// internal network: its host is an internal address, localhost or a name
// under .localhost, or a name that resolves to an internal address. What
// cannot be told — no host, a name that does not resolve in time — counts
// as internal.
func (g *Gate) internalURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return true
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return internalAddr(a)
	}
	if endsInNumber(host) {
		// The CLI's URL parser (WHATWG) reads such a host as IPv4:
		// 127.1, 0x7f.1, 2130706433.
		a, ok := parseIPv4Loose(host)
		return !ok || internalAddr(a)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	lookup := g.cfg.LookupHost
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return true
	}
	for _, a := range addrs {
		if internalAddr(a) {
			return true
		}
	}
	return false
}

// endsInNumber reports whether the last label of host is a number
// (decimal, 0x hex or octal), which makes a WHATWG URL parser read the
// host as an IPv4 address.
func endsInNumber(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// parseIPv4Loose parses host as the WHATWG URL standard parses an IPv4
// host: one to four parts, each decimal, octal (a leading 0) or hex (0x),
// the last filling the bytes that remain.
func parseIPv4Loose(host string) (netip.Addr, bool) {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var nums []uint64
	for _, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		n, err := strconv.ParseUint(p, base, 32)
		if p == "" && base != 10 {
			n, err = 0, nil // "0x" alone is zero
		}
		if err != nil {
			return netip.Addr{}, false
		}
		nums = append(nums, n)
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// urlHost is the host of a URL as error texts show it (the whole URL
// could carry credentials).
func urlHost(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}
