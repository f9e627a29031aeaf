package blob_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store/blob"
	"github.com/fleetcam/fleetcam/store/blob/s3test"
)

// TestS3PublicEndpointLinks: with a public endpoint, presigned links lead
// to its host, signed for it, and following one returns the object; the
// store reaches the server at 127.0.0.1, the links at localhost, the same
// server. With the region unset it is learnt from the store at its
// endpoint, never from the public one, which is only named in links: a
// public endpoint that is a listener no connection may reach gets its
// links all the same.
func TestS3PublicEndpointLinks(t *testing.T) {
	internal := s3test.Bucket(t)
	port := strings.TrimPrefix(internal.Endpoint, "http://127.0.0.1:")
	unreached := untouchedAddr(t)
	tests := []struct {
		name           string
		region, public string
		follow         bool // the link leads to the server
	}{
		{"region set", "us-east-1", "http://localhost:" + port, true},
		{"region learnt", "", "http://localhost:" + port, true},
		{"a public endpoint fleetcam cannot reach", "", "http://" + unreached, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := internal
			o.Region, o.PublicEndpoint = tc.region, tc.public
			s, err := blob.NewS3(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Check(t.Context()); err != nil {
				t.Fatal(err)
			}
			const key = "357660101000198/video/1/abc/public"
			if _, err := s.Put(t.Context(), key, strings.NewReader("the clip's bytes")); err != nil {
				t.Fatal(err)
			}
			link, err := s.PresignGet(t.Context(), key, time.Minute, "video/mp4", "clip.mp4")
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := url.Parse(tc.public); link.Scheme != want.Scheme || link.Host != want.Host {
				t.Fatalf("the link %s does not lead to %s", link, tc.public)
			}
			if !tc.follow {
				return
			}
			res, err := http.Get(link.String())
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK || string(body) != "the clip's bytes" || res.Header.Get("Content-Type") != "video/mp4" {
				t.Fatalf("following %s: %d %s %q", link, res.StatusCode, res.Header.Get("Content-Type"), body)
			}
		})
	}
}

// TestS3RefusesBadPublicEndpoint: a public endpoint that is not the URL of
// a host is refused, named as such.
func TestS3RefusesBadPublicEndpoint(t *testing.T) {
	for _, public := range []string{"localhost:8333", "ftp://media.example.com", "https://media.example.com/media", "http://"} {
		o := blob.S3Options{Endpoint: "http://127.0.0.1:8333", Bucket: "media", PublicEndpoint: public}
		if _, err := blob.NewS3(o); err == nil || !strings.Contains(err.Error(), "public endpoint") {
			t.Errorf("public endpoint %q: %v", public, err)
		}
	}
}

// untouchedAddr is the address of a loopback listener that fails the test
// if anything connects to it before the test ends.
func untouchedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var connected atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			connected.Store(true)
			c.Close()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		if connected.Load() {
			t.Errorf("a connection came to %s, which no request should reach", l.Addr())
		}
	})
	return l.Addr().String()
}
