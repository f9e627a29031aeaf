package smtptest

import (
	"net/smtp"
	"strings"
	"testing"
	"time"
)

// The server keeps a message sent with net/smtp, and refuses a recipient
// it was told to.
func TestAcceptsAndRefuses(t *testing.T) {
	s := Start(t)
	msg := "Subject: probe\r\n\r\nhello\r\n"
	if err := smtp.SendMail(s.Addr(), nil, "from@example.com", []string{"to@example.com"}, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	m := s.Await(t, "the probe", time.Minute)
	if m.From != "from@example.com" || len(m.To) != 1 || m.To[0] != "to@example.com" || !strings.Contains(m.Data, "hello") {
		t.Fatalf("kept %+v", m)
	}
	s.Reject("no@example.com", true)
	err := smtp.SendMail(s.Addr(), nil, "from@example.com", []string{"no@example.com"}, []byte(msg))
	if err == nil || !strings.Contains(err.Error(), "550") {
		t.Fatalf("a refused recipient: %v, want a 550", err)
	}
	if got := s.Take(); len(got) != 1 {
		t.Fatalf("%d messages kept, want the first only", len(got))
	}
}
