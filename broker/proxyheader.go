package broker

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/pires/go-proxyproto"
)

// Behind a TCP load balancer every device connection comes from the
// balancer's address: the per-address connect limit would count the whole
// fleet as one source, and the device links would all show the balancer.
// A balancer that sends the PROXY protocol header (HAProxy's send-proxy-v2,
// nginx's proxy_protocol) names the device's address; mqtt.trustedProxies
// lists the balancers whose header counts.

// proxyHeaderTimeout bounds the wait for a trusted balancer's header.
const proxyHeaderTimeout = connectTimeout

// withProxyHeaders wraps ln so that connections from the trusted prefixes
// must open with a PROXY header, whose source address becomes the
// connection's remote address; other connections are passed on untouched
// (a header from them is not read, and fails as a malformed MQTT packet).
// Without trusted prefixes ln is returned as it is.
func withProxyHeaders(ln net.Listener, trusted []string) (net.Listener, error) {
	if len(trusted) == 0 {
		return ln, nil
	}
	prefixes, err := parsePrefixes(trusted)
	if err != nil {
		return nil, err
	}
	return &proxyproto.Listener{Listener: ln, ReadHeaderTimeout: proxyHeaderTimeout,
		ConnPolicy: func(o proxyproto.ConnPolicyOptions) (proxyproto.Policy, error) {
			if ap, err := netip.ParseAddrPort(o.Upstream.String()); err == nil {
				for _, p := range prefixes {
					if p.Contains(ap.Addr().Unmap()) {
						return proxyproto.REQUIRE, nil
					}
				}
			}
			return proxyproto.SKIP, nil
		}}, nil
}

// parsePrefixes reads IP addresses and CIDR ranges.
func parsePrefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("broker: mqtt.trustedProxies: %q is neither an IP address nor a CIDR range", s)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
