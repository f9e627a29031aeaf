package postgres

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store/pgtest"
)

// holdingProxy passes TCP connections through to a server. While it holds,
// what the server sends goes no further (it waits in the proxy), while
// what the client sends still reaches the server.
type holdingProxy struct {
	ln     net.Listener
	target string
	gate   sync.RWMutex // held by hold, read-held by every write to a client
}

func startHoldingProxy(t *testing.T, target string) *holdingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{ln: ln, target: target}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		conns.Wait()
	})
	conns.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			conns.Go(func() {
				io.Copy(server, client)
				server.Close()
			})
			conns.Go(func() {
				defer client.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := server.Read(buf)
					if n > 0 {
						p.gate.RLock()
						_, werr := client.Write(buf[:n])
						p.gate.RUnlock()
						if werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	return p
}

func (p *holdingProxy) hold()    { p.gate.Lock() }
func (p *holdingProxy) release() { p.gate.Unlock() }

// through is url with its server replaced by the proxy.
func (p *holdingProxy) through(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// TestReadEndsWithoutWaitingForTheServer: a read-only transaction's caller
// goes on once its function has read what it needed, without waiting for
// the answer to its ROLLBACK; the connection goes back to the pool when
// that answer comes, and serves the next read.
func TestReadEndsWithoutWaitingForTheServer(t *testing.T) {
	t.Parallel()
	direct := pgtest.Database(t, "")
	target, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	px := startHoldingProxy(t, target.Host)
	e, err := OpenEngine(context.Background(), px.through(t, direct), Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Bool
	defer func() {
		if held.Load() {
			px.release()
		}
		e.Close()
	}()
	read := func(then func()) error {
		return e.view(t.Context(), func(tx *tx) error {
			var n int
			if err := tx.pg.QueryRow(tx.ctx, `SELECT 1`).Scan(&n); err != nil {
				return err
			}
			then()
			return nil
		})
	}

	done := make(chan error, 1)
	go func() {
		done <- read(func() {
			px.hold() // from here on the server's answers wait in the proxy
			held.Store(true)
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the read has not returned: it waits for the answer to its ROLLBACK")
	}
	if n := e.pool.Stat().AcquiredConns(); n != 1 {
		t.Errorf("%d connections out of the pool while the ROLLBACK's answer is held, want 1", n)
	}
	held.Store(false)
	px.release()
	waitFor(t, "the connection back in the pool once the ROLLBACK was answered", func() bool {
		return e.pool.Stat().AcquiredConns() == 0
	})
	if err := read(func() {}); err != nil {
		t.Fatalf("a read after: %v", err)
	}
}

// readsEnded waits until every read of e has had its ROLLBACK answered, so
// that what e counts it sent is what was sent before.
func readsEnded(t *testing.T, e *Engine) {
	t.Helper()
	waitFor(t, "every read's ROLLBACK answered", func() bool { return e.readEnds.Load() == 0 })
}
