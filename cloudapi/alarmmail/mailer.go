// Package alarmmail e-mails alarm reports to the recipients organizations
// and partners configure (/recipients/alarms, /recipients/health) through
// the SMTP server of the configuration. Sending happens outside any store
// transaction: the mailer reads the alarms past each recipient's cursor,
// sends one message, and only then moves the cursor, so an alarm is
// reported at least once even across a restart or an SMTP failure.
package alarmmail

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/smtp"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrDisabled is returned when no SMTP server is configured.
var ErrDisabled = errors.New("alarmmail: no SMTP server configured")

// Options configure a Mailer.
type Options struct {
	Store  *store.DB
	SMTP   configs.SMTP
	Logger *slog.Logger
	// Registerer receives the fleetcam_alarm_mail_* metrics; nil: not registered.
	Registerer prometheus.Registerer
	// Poll is how often due recipients are checked (default 10s).
	Poll time.Duration
	// Timeout bounds one SMTP conversation (default 30s).
	Timeout time.Duration
	// MaxAlarms bounds the alarms listed in one message; the rest follow in the next.
	MaxAlarms int
}

// Mailer sends alarm reports.
type Mailer struct {
	o      Options
	sent   prometheus.Counter
	failed prometheus.Counter
}

// New builds a mailer.
func New(o Options) *Mailer {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Poll <= 0 {
		o.Poll = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.MaxAlarms <= 0 {
		o.MaxAlarms = 100
	}
	m := &Mailer{o: o,
		sent: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "fleetcam", Subsystem: "alarm_mail",
			Name: "sent_total", Help: "Alarm report e-mails sent."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "fleetcam", Subsystem: "alarm_mail",
			Name: "failures_total", Help: "Alarm report e-mails that could not be sent (retried on the next poll)."}),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(m.sent, m.failed)
	}
	return m
}

// Run sends due reports every poll interval until ctx ends.
func (m *Mailer) Run(ctx context.Context) {
	if m.o.SMTP.Addr == "" {
		m.o.Logger.Info("alarm e-mail disabled: smtp.addr is empty")
		return
	}
	Poll(ctx, m.o.Poll, m.o.Logger, "alarm e-mail", m.RunOnce)
}

// Poll calls runOnce every interval until ctx ends, logging its errors
// under what: the loop of a mailer.
func Poll(ctx context.Context, every time.Duration, log *slog.Logger, what string, runOnce func(context.Context) (int, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := runOnce(ctx); err != nil && ctx.Err() == nil {
			log.Warn(what, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// report is one message to send: a recipient and its new alarms.
type report struct {
	recipient store.AlarmRecipient
	alarms    []store.Alarm
	orgNames  map[int64]string
	devices   map[string]string
}

// RunOnce sends every recipient that is due the alarms raised since its
// last report, and returns how many messages went out.
func (m *Mailer) RunOnce(ctx context.Context) (int, error) {
	if m.o.SMTP.Addr == "" {
		return 0, ErrDisabled
	}
	now := m.o.Store.Now()
	var due []report
	err := m.o.Store.View(ctx, func(tx *store.Tx) error {
		rs, err := tx.AlarmRecipients(func(r *store.AlarmRecipient) bool { return r.Due(now) })
		if err != nil {
			return err
		}
		for _, r := range rs {
			alarms, _, err := tx.Alarms(store.AlarmFilter{AfterID: r.LastAlarmID}, store.Sort{}, store.Page{})
			if err != nil {
				return err
			}
			rep := report{recipient: r, orgNames: map[int64]string{}, devices: map[string]string{}}
			for _, a := range alarms {
				if !r.Wants(&a) {
					continue
				}
				if len(rep.alarms) == m.o.MaxAlarms {
					break
				}
				rep.alarms = append(rep.alarms, a)
				rep.orgNames[a.OrganizationID], _ = tx.AlarmNames(&a)
				if d, err := tx.Device(a.IMEI); err == nil {
					rep.devices[a.IMEI] = d.Name
				}
			}
			if len(rep.alarms) > 0 {
				due = append(due, rep)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	sent := 0
	var errs []error
	for _, rep := range due {
		if err := ctx.Err(); err != nil {
			return sent, err
		}
		if err := m.send(rep.recipient.Email, compose(m.o.SMTP.From, rep, now)); err != nil {
			m.failed.Inc()
			errs = append(errs, fmt.Errorf("alarmmail: send to recipient %d: %w", rep.recipient.ID, err))
			continue
		}
		m.sent.Inc()
		sent++
		last := rep.alarms[len(rep.alarms)-1].ID
		// The mail went out: its record commits even while stopping.
		if err := m.o.Store.Update(context.WithoutCancel(ctx), store.Actor{Source: "alarmmail"}, func(tx *store.Tx) error {
			return tx.MarkAlarmRecipientReported(rep.recipient.ID, last, now)
		}); err != nil {
			errs = append(errs, err)
		}
	}
	return sent, errors.Join(errs...)
}

// send delivers one message over SMTP.
func (m *Mailer) send(to string, msg []byte) error { return Send(m.o.SMTP, m.o.Timeout, to, msg) }

// Send delivers one message to to through the SMTP server of cfg, with
// STARTTLS when the server offers it and authentication when a username is
// configured; timeout bounds the whole conversation. It is how every
// e-mail of fleetcam leaves (alarm reports, password resets).
func Send(cfg configs.SMTP, timeout time.Duration, to string, msg []byte) error {
	if cfg.Addr == "" {
		return ErrDisabled
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return fmt.Errorf("smtp.addr %q: %w", cfg.Addr, err)
	}
	conn, err := net.DialTimeout("tcp", cfg.Addr, timeout)
	if err != nil {
		return err
	}
	conn.SetDeadline(time.Now().Add(timeout))
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
			return err
		}
	}
	if cfg.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", cfg.Username, cfg.Password, host)); err != nil {
			return err
		}
	}
	if err := c.Mail(cfg.From); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// compose renders a plain-text report of rep's alarms.
func compose(from string, rep report, now time.Time) []byte {
	var subject string
	if len(rep.alarms) == 1 {
		a := rep.alarms[0]
		def, _ := store.AlarmDefinitionByID(a.AlarmDefinitionID)
		subject = fmt.Sprintf("[fleetcam] Alarm: %s on %s", def.Name, deviceLabel(rep, a.IMEI))
	} else {
		subject = fmt.Sprintf("[fleetcam] %d new alarms", len(rep.alarms))
	}
	var b strings.Builder
	writeHeaders(&b, from, rep.recipient.Email, subject, now)
	fmt.Fprintf(&b, "%d new alarm(s) since the last report.\r\n", len(rep.alarms))
	for _, a := range rep.alarms {
		def, _ := store.AlarmDefinitionByID(a.AlarmDefinitionID)
		b.WriteString("\r\n")
		fmt.Fprintf(&b, "Alarm %d: %s (severity %d)\r\n", a.ID, def.Name, def.Severity)
		fmt.Fprintf(&b, "  Device:       %s\r\n", deviceLabel(rep, a.IMEI))
		fmt.Fprintf(&b, "  Organization: %s (%d)\r\n", clean(rep.orgNames[a.OrganizationID]), a.OrganizationID)
		fmt.Fprintf(&b, "  Created:      %s\r\n", a.CreatedAt.UTC().Format(time.RFC3339))
		if a.Details != "" {
			fmt.Fprintf(&b, "  Details:      %s\r\n", clean(a.Details))
		}
		if a.Simulated {
			b.WriteString("  Simulated:    yes\r\n")
		}
		for _, c := range a.Comments {
			fmt.Fprintf(&b, "  Comment:      %s\r\n", clean(c.Details))
		}
		fmt.Fprintf(&b, "  What to do:   %s\r\n", def.Recommendation)
	}
	return []byte(b.String())
}

// Compose renders a plain-text message from from to to; the body's lines
// end in "\n" and are sent as CRLF lines.
func Compose(from, to, subject, body string, now time.Time) []byte {
	var b strings.Builder
	writeHeaders(&b, from, to, subject, now)
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n"))
	return []byte(b.String())
}

// writeHeaders writes the headers of a plain-text message and the blank
// line after them.
func writeHeaders(b *strings.Builder, from, to, subject string, now time.Time) {
	header := func(k, v string) { fmt.Fprintf(b, "%s: %s\r\n", k, v) }
	header("From", from)
	header("To", clean(to))
	header("Subject", clean(subject))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+randomID()+"@fleetcam>")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "8bit")
	b.WriteString("\r\n")
}

func deviceLabel(rep report, imei string) string {
	if name := rep.devices[imei]; name != "" {
		return clean(name) + " (" + imei + ")"
	}
	return imei
}

// clean keeps user text on one line, so it cannot add headers or lines.
func clean(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
