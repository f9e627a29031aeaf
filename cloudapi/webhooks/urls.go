package webhooks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// URL rules. A webhook URL is an absolute https URL whose host is a public
// address; plain http is accepted only for an organization that opts in
// (its allowInsecureWebhookUrls webhook setting). Private, loopback,
// link-local (the cloud metadata service 169.254.169.254 among them),
// unspecified, multicast and other reserved targets are refused, and so is
// every IPv6 address that carries an IPv4 address which is one of them
// (IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64, 6to4 and Teredo
// forms). They are refused twice: on the literal host when the URL is
// saved, and on the resolved address of every connection at delivery
// time, so a name that resolves to an internal address is refused as well.
// Redirects are not followed. Operators allow private targets with
// webhooks.allowPrivateTargets (tests and local development), and the
// refusal says so.

// allowPrivateHint tells how an operator allows internal targets.
const allowPrivateHint = "the operator allows them with FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true (webhooks.allowPrivateTargets), for local development"

// URL errors, tested with errors.Is.
var (
	// ErrInvalidURL means the URL is not an absolute http(s) URL.
	ErrInvalidURL = errors.New("webhooks: invalid url")
	// ErrForbiddenTarget means the URL or its resolved address is not public.
	ErrForbiddenTarget = errors.New("webhooks: target address not allowed")
	// ErrInsecureURL means a plain http URL where https is required.
	ErrInsecureURL = errors.New("webhooks: plain http url not allowed")
)

// MaxURLLength bounds a webhook URL.
const MaxURLLength = 2048

// ruleError is an error whose text is the rule broken, for API messages.
type ruleError struct {
	sentinel error
	rule     string
}

func (e *ruleError) Error() string { return e.rule }
func (e *ruleError) Unwrap() error { return e.sentinel }

// URLPolicy is what a webhook URL may be besides https to a public address.
type URLPolicy struct {
	// AllowPrivate admits internal targets (the operator setting
	// webhooks.allowPrivateTargets).
	AllowPrivate bool
	// AllowHTTP admits plain http URLs (the organization's opt-in).
	AllowHTTP bool
}

// CheckURL reports the rule raw breaks as a webhook URL under p, or nil.
// The error's text is the rule ("must be an absolute https URL"), to be
// prefixed with the field name.
func CheckURL(raw string, p URLPolicy) error {
	bad := func(rule string) error { return &ruleError{ErrInvalidURL, rule} }
	if len(raw) < 5 {
		return bad("must be a URL of at least 5 characters")
	}
	if len(raw) > MaxURLLength {
		return bad(fmt.Sprintf("must be at most %d characters", MaxURLLength))
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return bad("must be an absolute http or https URL")
	}
	if u.Fragment != "" {
		return bad("must not carry a fragment (#…)")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if numericHost(host) {
		return bad("must name its host by a DNS name or an IP address in standard form")
	}
	if !p.AllowPrivate {
		internal := host == "localhost" || strings.HasSuffix(host, ".localhost") || host == "metadata.google.internal"
		if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
			internal = true
		}
		if internal {
			return &ruleError{ErrForbiddenTarget, "must not point to a loopback, private, link-local or metadata address; " + allowPrivateHint}
		}
	}
	if u.Scheme == "http" && !p.AllowHTTP {
		return &ruleError{ErrInsecureURL, "must be an https URL (plain http needs the organization's allowInsecureWebhookUrls webhook setting)"}
	}
	return nil
}

// reserved are ranges that are not reachable public unicast addresses and
// that net/netip does not classify.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated), ::1 and :: among them
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard only
	netip.MustParsePrefix("2001:2::/48"),     // benchmarking
	netip.MustParsePrefix("2001:10::/28"),    // ORCHID
	netip.MustParsePrefix("2001:20::/28"),    // ORCHIDv2
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// PublicAddr reports whether ip is a public unicast address a webhook may
// target: not loopback, private, link-local (169.254.169.254), unspecified,
// multicast or otherwise reserved, and, for an IPv6 address that carries
// an IPv4 address, not carrying one that is any of those.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return false
		}
	}
	for _, v4 := range embeddedIPv4(ip) {
		if !PublicAddr(v4) {
			return false
		}
	}
	return true
}

// IPv6 ranges whose addresses carry an IPv4 address.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052: the last 32 bits
	translate = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 IPv4-translated: the last 32 bits
	sixToFour = netip.MustParsePrefix("2002::/16")       // RFC 3056: bits 16 to 47
	teredo    = netip.MustParsePrefix("2001::/32")       // RFC 4380: server in bits 32 to 63, client inverted in the last 32
)

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries by one of
// the transition mechanisms above (IPv4-mapped addresses are unmapped
// before, IPv4-compatible ones are reserved as a whole).
func embeddedIPv4(ip netip.Addr) []netip.Addr {
	if !ip.Is6() {
		return nil
	}
	b := ip.As16()
	v4 := func(i int, invert bool) netip.Addr {
		a := [4]byte(b[i : i+4])
		if invert {
			for j := range a {
				a[j] ^= 0xff
			}
		}
		return netip.AddrFrom4(a)
	}
	switch {
	case nat64.Contains(ip), translate.Contains(ip):
		return []netip.Addr{v4(12, false)}
	case sixToFour.Contains(ip):
		return []netip.Addr{v4(2, false)}
	case teredo.Contains(ip):
		return []netip.Addr{v4(4, false), v4(12, true)}
	}
	return nil
}

// numericHost reports whether host is not an IP address in standard form
// but looks like a number (2130706433, 0x7f.1, 127.1): resolvers read such
// hosts in different ways, and no DNS name has a numeric last label.
func numericHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}

// guardDial refuses connections to non-public addresses. It runs on the
// address actually dialled, after name resolution.
func guardDial(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenTarget, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !PublicAddr(ip) {
		return fmt.Errorf("%w: %s resolves to a loopback, private, link-local or reserved address; %s", ErrForbiddenTarget, host, allowPrivateHint)
	}
	return nil
}

// newClient builds the delivery HTTP client: no proxy, no redirects, the
// address guard on every connection unless private targets are allowed.
func newClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = guardDial
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
