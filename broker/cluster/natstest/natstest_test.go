package natstest

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The server takes clients, drops them when stopped, and takes them again
// on the same URL once restarted: the outage the cluster tests play.
func TestStopAndRestartOnTheSamePort(t *testing.T) {
	s := Start(t)
	url := s.URL()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync("natstest.probe"); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := s.Subscriptions(); n == 0 {
		t.Fatal("the server holds no subscription after a client subscribed")
	}
	s.Stop()
	if s.Subscriptions() != 0 {
		t.Fatal("a stopped server reports subscriptions")
	}
	s.Restart()
	if s.URL() != url {
		t.Fatalf("restarted on %s, want %s", s.URL(), url)
	}
	deadline := time.Now().Add(time.Minute)
	for !nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("the client did not reconnect to the restarted server within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
