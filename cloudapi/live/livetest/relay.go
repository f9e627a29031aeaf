// Package livetest has a live.Relay of nodes in one process, for the tests
// of live streams across nodes.
package livetest

import (
	"bytes"
	"context"
	"strings"
	"sync"
)

// Relay is a live.Relay of nodes in one process: subscriptions with '*'
// (one token) and '>' (the rest) wildcards, as NATS has them, and requests
// answered by the first subscriber that answers.
type Relay struct {
	nobody error
	mu     sync.Mutex
	next   int
	subs   map[int]sub
}

type sub struct {
	pattern string
	fn      func(subject string, data []byte) []byte
}

// NewRelay returns an empty Relay; a request no subscriber answers is
// nobody (live.ErrNobody, which this package cannot name: live's own tests
// use it).
func NewRelay(nobody error) *Relay { return &Relay{nobody: nobody, subs: map[int]sub{}} }

// matches reports whether subject matches pattern.
func matches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i := range p {
		switch {
		case p[i] == ">":
			return len(s) > i
		case i >= len(s), p[i] != "*" && p[i] != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}

func (r *Relay) matching(subject string) []sub {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sub
	for _, s := range r.subs {
		if matches(s.pattern, subject) {
			out = append(out, s)
		}
	}
	return out
}

// Request implements live.Relay.
func (r *Relay) Request(_ context.Context, subject string, data []byte) ([]byte, error) {
	for _, s := range r.matching(subject) {
		if ans := s.fn(subject, bytes.Clone(data)); ans != nil {
			return ans, nil
		}
	}
	return nil, r.nobody
}

// Publish implements live.Relay.
func (r *Relay) Publish(subject string, data []byte) error {
	for _, s := range r.matching(subject) {
		s.fn(subject, bytes.Clone(data))
	}
	return nil
}

// Subscribe implements live.Relay.
func (r *Relay) Subscribe(subject string, fn func(subject string, data []byte) []byte) (func(), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	id := r.next
	r.subs[id] = sub{subject, fn}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.subs, id)
	}, nil
}
