package webhooks

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url          string
		allowPrivate bool
		want         error
		rule         string
	}{
		{"https://hooks.example.com/fleet?token=1", false, nil, ""},
		{"http://93.184.216.34:8080/x", false, nil, ""},
		{"https://[2606:4700::1111]/x", false, nil, ""},
		{"ftp://hooks.example.com/x", false, ErrInvalidURL, "absolute http or https"},
		{"/relative/path", false, ErrInvalidURL, "absolute http or https"},
		{"hooks.example.com/x", false, ErrInvalidURL, "absolute http or https"},
		{"https://", false, ErrInvalidURL, "absolute http or https"},
		{"h:/x", false, ErrInvalidURL, "at least 5"},
		{"https://hooks.example.com/#frag", false, ErrInvalidURL, "fragment"},
		{"https://hooks.example.com/" + strings.Repeat("a", MaxURLLength), false, ErrInvalidURL, "at most"},
		{"http://127.0.0.1:9000/x", false, ErrForbiddenTarget, "loopback"},
		{"http://localhost:9000/x", false, ErrForbiddenTarget, "loopback"},
		{"http://api.localhost/x", false, ErrForbiddenTarget, "loopback"},
		{"http://10.1.2.3/x", false, ErrForbiddenTarget, "private"},
		{"http://172.20.0.1/x", false, ErrForbiddenTarget, "private"},
		{"http://192.168.1.10/x", false, ErrForbiddenTarget, "private"},
		{"http://169.254.169.254/latest/meta-data", false, ErrForbiddenTarget, "metadata"},
		{"http://metadata.google.internal/x", false, ErrForbiddenTarget, "metadata"},
		{"http://0.0.0.0/x", false, ErrForbiddenTarget, ""},
		{"http://[::1]/x", false, ErrForbiddenTarget, ""},
		{"http://[::ffff:127.0.0.1]/x", false, ErrForbiddenTarget, ""},
		{"http://[fd00:ec2::254]/x", false, ErrForbiddenTarget, ""},
		{"http://[fe80::1]/x", false, ErrForbiddenTarget, ""},
		{"http://224.0.0.1/x", false, ErrForbiddenTarget, ""},
		{"http://100.64.0.1/x", false, ErrForbiddenTarget, ""},
		{"http://127.0.0.1:9000/x", true, nil, ""},
		{"http://localhost:9000/x", true, nil, ""},
		{"ftp://127.0.0.1/x", true, ErrInvalidURL, "absolute"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			err := CheckURL(tc.url, tc.allowPrivate)
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
	} {
		if got := PublicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("PublicAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestGuardDialRefusesResolvedPrivateAddresses(t *testing.T) {
	for addr, ok := range map[string]bool{"8.8.8.8:443": true, "127.0.0.1:80": false, "[::1]:80": false, "169.254.169.254:80": false} {
		err := guardDial("tcp", addr, nil)
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrForbiddenTarget)) {
			t.Errorf("guardDial(%s) = %v", addr, err)
		}
	}
}
