// Package smtptest is an SMTP server for tests of what fleetcam e-mails: it
// listens on 127.0.0.1:0, speaks just enough SMTP to accept messages,
// refuses the recipients a test chooses and keeps what it accepted.
package smtptest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Mail is one accepted message.
type Mail struct {
	From string
	To   []string
	Data string // headers and body, as sent between DATA and the final dot
}

// Server is a running SMTP stand-in.
type Server struct {
	ln      net.Listener
	mu      sync.Mutex
	mails   []Mail
	reject  map[string]bool // recipients answered 550
	arrived chan struct{}
}

// Start starts a server that stops when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{ln: ln, reject: map[string]bool{}, arrived: make(chan struct{}, 1)}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

// Addr is the host:port to send to.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Reject makes the server refuse (on) or accept again (off) a recipient.
func (s *Server) Reject(addr string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reject[addr] = on
}

// Take returns the messages accepted since the last Take.
func (s *Server) Take() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.mails
	s.mails = nil
	return out
}

// Await waits until a message has been accepted and returns the first one
// not yet taken; it fails the test naming what after within.
func (s *Server) Await(tb testing.TB, what string, within time.Duration) Mail {
	tb.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.mails) > 0 {
			m := s.mails[0]
			s.mu.Unlock()
			return m
		}
		s.mu.Unlock()
		select {
		case <-s.arrived:
		case <-deadline.C:
			tb.Fatalf("timed out after %v waiting for %s", within, what)
		}
	}
}

func (s *Server) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	reply := func(line string) { fmt.Fprintf(c, "%s\r\n", line) }
	reply("220 smtptest ESMTP")
	var m Mail
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSpace(line)
		cmd := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			m = Mail{From: strings.Trim(line[len("MAIL FROM:"):], "<> ")}
			reply("250 OK")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			to := strings.Trim(line[len("RCPT TO:"):], "<> ")
			s.mu.Lock()
			rejected := s.reject[to]
			s.mu.Unlock()
			if rejected {
				reply("550 no such user")
				continue
			}
			m.To = append(m.To, to)
			reply("250 OK")
		case cmd == "DATA":
			reply("354 go ahead")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			m.Data = b.String()
			s.mu.Lock()
			s.mails = append(s.mails, m)
			s.mu.Unlock()
			select {
			case s.arrived <- struct{}{}:
			default:
			}
			reply("250 queued")
		case cmd == "QUIT":
			reply("221 bye")
			return
		default: // EHLO, HELO, RSET, NOOP
			reply("250 OK")
		}
	}
}
