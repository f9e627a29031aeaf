package cloudapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// serveHTTP serves the API with the http.Server fleetcam runs it with, on
// its own listener, and returns that listener's address.
func (e *testEnv) serveHTTP() string {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	hs := e.api.HTTPServer()
	go hs.Serve(ln)
	e.t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// rawRequest opens a connection and writes head (request line and headers)
// and the start of a body, leaving the rest unsent.
func rawRequest(t *testing.T, addr, head, body string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head+body); err != nil {
		t.Fatal(err)
	}
	return conn
}

// trickle writes one byte every tick until the connection fails or stop closes.
func trickle(conn net.Conn, stop <-chan struct{}) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}
}

// waitAnsweredOrClosed reads until the server closes the connection and
// returns what it answered, failing the test if nothing happens within limit.
func waitAnsweredOrClosed(t *testing.T, conn net.Conn, limit time.Duration) string {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(limit))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %s; read %q", limit, got)
	}
	return string(got)
}

func TestHTTPServerEndsSlowRequests(t *testing.T) {
	e := newMediaEnv(t, func(c *configs.Config, _ *Deps) {
		c.HTTP.ReadHeaderTimeout, c.HTTP.ReadTimeout = 300*time.Millisecond, 300*time.Millisecond
		// Far beyond the read timeouts, so that what ends a request is
		// one of them, even on a busy machine.
		c.HTTP.RequestTimeout = 10 * time.Minute
	})
	addr := e.serveHTTP()
	const limit = 2 * time.Minute // far beyond the read timeouts, far below the call limit

	t.Run("body trickled byte by byte", func(t *testing.T) {
		conn := rawRequest(t, addr, "POST /v2/authenticate HTTP/1.1\r\nHost: fleetcam\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n", "{")
		stop := make(chan struct{})
		defer close(stop)
		go trickle(conn, stop)
		if got := waitAnsweredOrClosed(t, conn, limit); strings.HasPrefix(got, "HTTP/1.1 200") {
			t.Fatalf("an incomplete body was accepted: %q", got)
		}
	})
	t.Run("headers never finished", func(t *testing.T) {
		conn := rawRequest(t, addr, "POST /v2/authenticate HTTP/1.1\r\nHost: fleetcam\r\n", "")
		waitAnsweredOrClosed(t, conn, limit)
	})
	t.Run("a media upload may take longer than an API call", func(t *testing.T) {
		ref := store.MediaRef{IMEI: e.dev.IMEI, FileType: store.FileSnapshot, CameraID: 1, FileID: "slow1"}
		link, _ := e.api.uploadURL(ref)
		path := link[strings.Index(link, "/v2/"):]
		body := string(testJPEG("slow upload"))
		half := len(body) / 2
		upload := rawRequest(t, addr, fmt.Sprintf("PUT %s HTTP/1.1\r\nHost: fleetcam\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n", path, len(body)), body[:half])
		// An API call started after the upload is cut at the read timeout:
		// once it is, the upload has been waiting longer than that too.
		probe := rawRequest(t, addr, "POST /v2/authenticate HTTP/1.1\r\nHost: fleetcam\r\nContent-Length: 10\r\n\r\n", "{")
		waitAnsweredOrClosed(t, probe, limit)
		if _, err := io.WriteString(upload, body[half:]); err != nil {
			t.Fatalf("upload connection closed at the API read timeout: %v", err)
		}
		upload.SetReadDeadline(time.Now().Add(limit))
		res, err := http.ReadResponse(bufio.NewReader(upload), nil)
		if err != nil {
			t.Fatalf("no answer to the completed upload: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("upload: status %d", res.StatusCode)
		}
	})
}
