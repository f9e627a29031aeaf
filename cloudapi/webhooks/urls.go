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

// URL rules. A webhook URL is an absolute http or https URL whose host is a
// public address. Private, loopback, link-local (the cloud metadata service
// 169.254.169.254 among them), unspecified, multicast and other reserved
// targets are refused twice: on the literal host when the URL is saved, and
// on the resolved address of every connection at delivery time, so a name
// that resolves to an internal address is refused as well. Redirects are not
// followed. Operators allow private targets with webhooks.allowPrivateTargets
// (tests and local development).

// URL errors, tested with errors.Is.
var (
	// ErrInvalidURL means the URL is not an absolute http(s) URL.
	ErrInvalidURL = errors.New("webhooks: invalid url")
	// ErrForbiddenTarget means the URL or its resolved address is not public.
	ErrForbiddenTarget = errors.New("webhooks: target address not allowed")
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

// CheckURL reports the rule raw breaks as a webhook URL, or nil. The error's
// text is the rule ("must be an absolute http or https URL"), to be prefixed
// with the field name.
func CheckURL(raw string, allowPrivate bool) error {
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
	if allowPrivate {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || host == "metadata.google.internal" {
		return &ruleError{ErrForbiddenTarget, "must not point to a loopback, private, link-local or metadata address"}
	}
	if ip, err := netip.ParseAddr(host); err == nil && !PublicAddr(ip) {
		return &ruleError{ErrForbiddenTarget, "must not point to a loopback, private, link-local or metadata address"}
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
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
}

// PublicAddr reports whether ip is a public unicast address a webhook may
// target: not loopback, private, link-local (169.254.169.254), unspecified,
// multicast or otherwise reserved. IPv4-mapped IPv6 addresses are judged as IPv4.
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
	return true
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
		return fmt.Errorf("%w: %s resolves to a loopback, private, link-local or reserved address", ErrForbiddenTarget, host)
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
