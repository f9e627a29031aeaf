package webhooks

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	none, private, insecure := URLPolicy{}, URLPolicy{AllowPrivate: true}, URLPolicy{AllowHTTP: true}
	tests := []struct {
		url    string
		policy URLPolicy
		want   error
		rule   string
	}{
		{"https://hooks.example.com/fleet?token=1", none, nil, ""},
		{"http://93.184.216.34:8080/x", insecure, nil, ""},
		{"http://93.184.216.34:8080/x", none, ErrInsecureURL, "must be an https URL"},
		{"http://hooks.example.com/x", private, ErrInsecureURL, "allowInsecureWebhookUrls"},
		{"https://[2606:4700::1111]/x", none, nil, ""},
		{"ftp://hooks.example.com/x", none, ErrInvalidURL, "absolute http or https"},
		{"/relative/path", none, ErrInvalidURL, "absolute http or https"},
		{"hooks.example.com/x", none, ErrInvalidURL, "absolute http or https"},
		{"https://", none, ErrInvalidURL, "absolute http or https"},
		{"h:/x", none, ErrInvalidURL, "at least 5"},
		{"https://hooks.example.com/#frag", none, ErrInvalidURL, "fragment"},
		{"https://hooks.example.com/" + strings.Repeat("a", MaxURLLength), none, ErrInvalidURL, "at most"},
		{"http://127.0.0.1:9000/x", none, ErrForbiddenTarget, "FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true"},
		{"http://localhost:9000/x", none, ErrForbiddenTarget, "loopback"},
		{"http://api.localhost/x", none, ErrForbiddenTarget, "loopback"},
		{"http://10.1.2.3/x", none, ErrForbiddenTarget, "private"},
		{"http://172.20.0.1/x", none, ErrForbiddenTarget, "private"},
		{"http://192.168.1.10/x", none, ErrForbiddenTarget, "private"},
		{"http://169.254.169.254/latest/meta-data", none, ErrForbiddenTarget, "metadata"},
		{"http://metadata.google.internal/x", none, ErrForbiddenTarget, "metadata"},
		{"http://0.0.0.0/x", none, ErrForbiddenTarget, ""},
		{"http://[::1]/x", none, ErrForbiddenTarget, ""},
		{"http://[::ffff:127.0.0.1]/x", none, ErrForbiddenTarget, ""},
		{"http://[fd00:ec2::254]/x", none, ErrForbiddenTarget, ""},
		{"http://[fe80::1]/x", none, ErrForbiddenTarget, ""},
		{"http://224.0.0.1/x", none, ErrForbiddenTarget, ""},
		{"http://100.64.0.1/x", none, ErrForbiddenTarget, ""},
		{"http://127.0.0.1:9000/x", URLPolicy{AllowPrivate: true, AllowHTTP: true}, nil, ""},
		{"https://localhost:9000/x", private, nil, ""},
		{"ftp://127.0.0.1/x", private, ErrInvalidURL, "absolute"},
		// IPv6 forms that carry an internal IPv4 address.
		{"https://[::127.0.0.1]/x", none, ErrForbiddenTarget, "loopback"},
		{"https://[::a9fe:a9fe]/x", none, ErrForbiddenTarget, ""},
		{"https://[::ffff:169.254.169.254]/x", none, ErrForbiddenTarget, ""},
		{"https://[::ffff:0:a9fe:a9fe]/x", none, ErrForbiddenTarget, ""},
		{"https://[64:ff9b::a9fe:a9fe]/x", none, ErrForbiddenTarget, ""},
		{"https://[64:ff9b::10.0.0.1]/x", none, ErrForbiddenTarget, ""},
		{"https://[64:ff9b:1::a00:1]/x", none, ErrForbiddenTarget, ""},
		{"https://[2002:a9fe:a9fe::1]/x", none, ErrForbiddenTarget, ""},
		{"https://[2002:7f00:1::]/x", none, ErrForbiddenTarget, ""},
		{"https://[2001:0:4136:e378:8000:63bf:5601:5601]/x", none, ErrForbiddenTarget, ""}, // Teredo client 169.254.169.254
		{"https://[2001:0:a00:1::f7f7:f7f7]/x", none, ErrForbiddenTarget, ""},              // Teredo server 10.0.0.1
		{"https://[fec0::1]/x", none, ErrForbiddenTarget, ""},
		// The same forms that carry a public IPv4 address.
		{"https://[64:ff9b::808:808]/x", none, nil, ""},
		{"https://[2002:808:808::1]/x", none, nil, ""},
		{"https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/x", none, nil, ""},
		// Hosts that some resolvers read as an IPv4 address.
		{"https://2130706433/x", private, ErrInvalidURL, "standard form"},
		{"https://0x7f.1/x", none, ErrInvalidURL, "standard form"},
		{"https://127.1/x", none, ErrInvalidURL, "standard form"},
		{"https://hooks.example.com.:8443/x", none, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckURL(tc.url, tc.policy)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.rule) {
				t.Fatalf("rule %q does not mention %q", err, tc.rule)
			}
		})
	}
}

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2001:4860:4860::8888": true,
		"127.0.0.1": false, "169.254.169.254": false, "10.0.0.1": false, "::": false, "ff02::1": false,
		"255.255.255.255": false, "::ffff:10.0.0.1": false, "198.18.0.1": false,
		"::127.0.0.1": false, "64:ff9b::a9fe:a9fe": false, "2002:a9fe:a9fe::1": false, "2002:c0a8:101::": false,
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": false, "100::1": false, "3fff::1": false,
		"64:ff9b::808:808": true, "2002:808:808::1": true,
	} {
		if got := PublicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("PublicAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestGuardDialRefusesResolvedPrivateAddresses(t *testing.T) {
	for addr, ok := range map[string]bool{"8.8.8.8:443": true, "127.0.0.1:80": false, "[::1]:80": false, "169.254.169.254:80": false,
		"[::127.0.0.1]:80": false, "[64:ff9b::a9fe:a9fe]:80": false, "[2002:a9fe:a9fe::1]:443": false,
		"[2001:0:4136:e378:8000:63bf:5601:5601]:443": false, "[64:ff9b::808:808]:443": true} {
		err := guardDial("tcp", addr, nil)
		if (err == nil) != ok || (err != nil && (!errors.Is(err, ErrForbiddenTarget) || !strings.Contains(err.Error(), "FLEETCAM_WEBHOOKS_ALLOW_PRIVATE_TARGETS"))) {
			t.Errorf("guardDial(%s) = %v", addr, err)
		}
	}
}
