package mqttd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

func TestCloseDisconnectsEveryone(t *testing.T) {
	e := newEnv(t, Options{})
	pc := e.mustPaho("paho", nil)
	v5, _ := e.rawConnect(5, "v5", withExpiry(60, true))
	v5.Subscribe(1, "v5/down")
	v3, _ := e.rawConnect(4, "v3", nil)
	silent := e.raw(5) // connected, no CONNECT yet
	e.settle(4)

	if err := e.srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Close returned after every connection ended and its Closed ran.
	for _, id := range []string{"paho", "v5", "v3"} {
		if n := len(e.h.all("closed", id)); n != 1 {
			t.Errorf("Closed(%s) called %d times when Close returned, want 1", id, n)
		}
	}
	if n := e.conns(); n != 0 {
		t.Errorf("%d connections left after Close", n)
	}
	if n := e.srv.Info().ClientsConnected.Load(); n != 0 {
		t.Errorf("ClientsConnected = %d after Close", n)
	}
	if d := pc.serverDisconnect(); d.ReasonCode != 0x8B {
		t.Errorf("paho got DISCONNECT 0x%02X, want 0x8B", d.ReasonCode)
	}
	if got := v5.Ended(); len(got) != 1 || got[0].ReasonCode != 0x8B || got[0].Properties.ReasonString != "server shutting down" {
		t.Errorf("v5 client got %+v before the end, want one DISCONNECT 0x8B", got)
	}
	v3.EndedWith(packets.ErrServerShuttingDown)
	if got := silent.Ended(); len(got) != 0 {
		t.Errorf("a client without CONNECT got %d packets", len(got))
	}

	// After Close.
	if err := e.srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if ok, err := e.srv.Publish("v5", "v5/down", []byte("late"), nil); ok || !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close = %v, %v; want false, ErrClosed", ok, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := e.srv.Serve("late", ln); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close: %v, want ErrClosed", err)
	}
	if nc, err := net.DialTimeout("tcp", e.addr, time.Second); err == nil {
		nc.Close()
		t.Error("the listener still accepts connections after Close")
	}
	client, server := net.Pipe()
	e.srv.ServeConn("late", server) // returns at once, closing the connection
	_ = client.SetReadDeadline(time.Now().Add(patience))
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("ServeConn after Close: the client reads %v, want EOF", err)
	}
}

func TestCloseWaitsForConnections(t *testing.T) {
	e := newEnv(t, Options{})
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	t.Cleanup(open)
	rc, _ := e.rawConnect(5, "cam", nil)
	e.h.await(t, "ready", "cam", 1)
	blocked := make(chan struct{})
	e.h.set(func(h *handler) {
		h.publish = func(*Conn, *packets.Packet) error { close(blocked); <-gate; return nil }
	})
	rc.Publish("cam/up", "x", 0, 0)
	<-blocked

	closed := make(chan struct{})
	go func() { _ = e.srv.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a connection was still in its handler")
	case <-time.After(100 * time.Millisecond):
	}
	open()
	select {
	case <-closed:
	case <-time.After(patience):
		t.Fatal("Close did not return")
	}
	if n := len(e.h.all("closed", "cam")); n != 1 {
		t.Errorf("Closed called %d times, want 1", n)
	}
}

func TestCloseWhileClientsConnect(t *testing.T) {
	// Several rounds: a close that races with CONNECTs hits them at
	// different points of their handling.
	for range 10 {
		closeWhileClientsConnect(t)
	}
}

func closeWhileClientsConnect(t *testing.T) {
	e := newEnv(t, Options{})
	const n = 20
	clients := make([]*mqtttest.Client, n)
	for i := range clients {
		clients[i] = e.raw(byte(4 + i%2))
	}
	var wg sync.WaitGroup
	for i, rc := range clients {
		wg.Go(func() {
			// The write may fail once the server closed the connection.
			_, _ = rc.Conn().Write(rc.Encode(mqtttest.ConnectPacket(fmt.Sprint("cam", i), nil)))
		})
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, rc := range clients {
		rc.Ended()
	}
	if e.conns() != 0 || e.srv.Info().ClientsConnected.Load() != 0 {
		t.Errorf("%d connections, %d clients after Close", e.conns(), e.srv.Info().ClientsConnected.Load())
	}
	// Every connection that went online was closed once.
	for i := range n {
		id := fmt.Sprint("cam", i)
		if on, off := len(e.h.all("online", id)), len(e.h.all("closed", id)); on > off || off > 1 {
			t.Errorf("%s: Online %d times, Closed %d times", id, on, off)
		}
	}
}

func TestCloseCutsWritesToClientsThatDoNotRead(t *testing.T) {
	e := newEnv(t, Options{WriteTimeout: blockedWriteTimeout})
	rc, _ := e.rawConnect(5, "cam", nil)
	rc.Subscribe(1, "cam/down")
	// The client reads no more; the server's writes soon block on it.
	done := e.flood("cam", "cam/down")
	e.awaitBlockedWrite()
	began := time.Now()
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d >= blockedWriteTimeout/2 {
		t.Errorf("Close took %v with a write blocked, want well under the write timeout of %v", d, blockedWriteTimeout)
	}
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("Publish still blocked after Close")
	}
	if n := len(e.h.all("closed", "cam")); n != 1 {
		t.Errorf("Closed called %d times, want 1", n)
	}
}
