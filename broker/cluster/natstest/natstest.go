// Package natstest runs a NATS server inside a test process, on a free
// loopback port, for the tests of fleetcam's cluster mode: nothing needs
// to be installed or running. Only tests import it, so the server is no
// part of the fleetcam binary.
package natstest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is a NATS server on 127.0.0.1 that a test can stop and start
// again on the same port, as an outage and its end.
type Server struct {
	tb   testing.TB
	port int

	mu  sync.Mutex
	srv *server.Server
}

// Start runs a NATS server until the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{tb: tb, port: -1}
	s.start()
	tb.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.tb.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: s.port, NoLog: true, NoSigs: true})
	if err != nil {
		s.tb.Fatalf("natstest: %v", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		s.tb.Fatal("natstest: the NATS server did not start")
	}
	_, port, _ := net.SplitHostPort(srv.Addr().String())
	s.port, _ = strconv.Atoi(port)
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
}

// URL is the server's client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// Stop shuts the server down; the clients lose their connections.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart starts the server again on its port after Stop.
func (s *Server) Restart() {
	s.tb.Helper()
	s.start()
}

// Subscriptions is how many subscriptions the server holds.
func (s *Server) Subscriptions() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return 0
	}
	return s.srv.NumSubscriptions()
}
