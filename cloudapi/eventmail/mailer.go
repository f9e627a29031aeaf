// Package eventmail e-mails the notification recipients of a device's
// event types (PUT /devices/{imei}/events/{eventType}/notification-recipients)
// when such an event is stored. The store queues one job per event and
// recipient in the event's own transaction (store/eventmail.go); this
// mailer sends each job through the SMTP server of the configuration,
// outside any transaction, and deletes it once sent, so a recipient is told
// at least once even across a restart. A failed send is tried again with a
// growing pause and given up, logged, a day after the event was stored.
// Without an SMTP server (smtp.addr empty) the queued jobs are dropped.
package eventmail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/alarmmail"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Mailer.
type Options struct {
	Store *store.DB
	SMTP  configs.SMTP
	// PublicURL is where the API is reached; the link to the event in each
	// message starts with it (a bare path when it is empty).
	PublicURL string
	Logger    *slog.Logger
	// Registerer receives the fleetcam_event_mail_* metrics; nil: not registered.
	Registerer prometheus.Registerer
	// Poll is how often the queue is checked (default 10s).
	Poll time.Duration
	// Timeout bounds one SMTP conversation (default 30s).
	Timeout time.Duration
	// Batch bounds the jobs one round sends (default 100).
	Batch int
}

// Mailer drains the event e-mail queue.
type Mailer struct {
	o                          Options
	sent, failed, gaveUp, drop prometheus.Counter
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
	if o.Batch <= 0 {
		o.Batch = 100
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "fleetcam", Subsystem: "event_mail", Name: name, Help: help})
	}
	m := &Mailer{o: o,
		sent:   counter("sent_total", "Event notification e-mails sent."),
		failed: counter("failures_total", "Event notification e-mails that could not be sent (tried again later)."),
		gaveUp: counter("given_up_total", "Event notification e-mails given up a day after their event."),
		drop:   counter("dropped_total", "Event notification e-mails dropped: no SMTP server, or the event is gone."),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(m.sent, m.failed, m.gaveUp, m.drop)
	}
	return m
}

// Run drains the queue every poll interval until ctx ends.
func (m *Mailer) Run(ctx context.Context) {
	if m.o.SMTP.Addr == "" {
		m.o.Logger.Info("event e-mail disabled: smtp.addr is empty; queued event e-mails are dropped")
	}
	alarmmail.Poll(ctx, m.o.Poll, m.o.Logger, "event e-mail", m.RunOnce)
}

// job is one due e-mail with what its message says; msg is nil when the
// job is to be dropped (its event is gone).
type job struct {
	mail store.EventMail
	msg  []byte
}

// RunOnce sends the jobs due now, a batch at a time until none is due, and
// returns how many messages went out.
func (m *Mailer) RunOnce(ctx context.Context) (int, error) {
	sent := 0
	for {
		jobs, err := m.due(ctx)
		if err != nil || len(jobs) == 0 {
			return sent, err
		}
		n, retried, err := m.sendAll(ctx, jobs)
		sent += n
		if err != nil || retried == len(jobs) || len(jobs) < m.o.Batch {
			return sent, err
		}
	}
}

// due reads the jobs due now and composes their messages.
func (m *Mailer) due(ctx context.Context) ([]job, error) {
	now := m.o.Store.Now()
	var out []job
	err := m.o.Store.View(ctx, func(tx *store.Tx) error {
		due, err := tx.DueEventMail(m.o.Batch)
		if err != nil {
			return err
		}
		for _, d := range due {
			j := job{mail: d}
			e, err := tx.Event(d.EventID)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return err
			default:
				name := ""
				if dev, err := tx.Device(d.IMEI); err == nil {
					name = dev.Name
				}
				j.msg = m.compose(d.Recipient, e, name, now)
			}
			out = append(out, j)
		}
		return nil
	})
	return out, err
}

// sendAll sends jobs and records each outcome; it returns how many were
// sent and how many wait for another attempt.
func (m *Mailer) sendAll(ctx context.Context, jobs []job) (sent, retried int, err error) {
	var errs []error
	// What was sent is recorded even while stopping.
	record := func(fn func(tx *store.Tx) error) {
		if err := m.o.Store.Update(context.WithoutCancel(ctx), store.Actor{Source: "eventmail"}, fn); err != nil {
			errs = append(errs, err)
		}
	}
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return sent, retried, errors.Join(append(errs, err)...)
		}
		if j.msg == nil || m.o.SMTP.Addr == "" {
			m.drop.Inc()
			record(func(tx *store.Tx) error { return tx.EventMailDone(j.mail) })
			continue
		}
		if err := alarmmail.Send(m.o.SMTP, m.o.Timeout, j.mail.Recipient, j.msg); err != nil {
			m.failed.Inc()
			retried++
			record(func(tx *store.Tx) error {
				gaveUp, ferr := tx.EventMailFailed(j.mail)
				if gaveUp && ferr == nil {
					m.gaveUp.Inc()
					m.o.Logger.Warn("event e-mail given up a day after its event", "event", j.mail.EventID,
						"imei", j.mail.IMEI, "attempts", j.mail.Attempts+1, "err", err)
				}
				return ferr
			})
			continue
		}
		m.sent.Inc()
		sent++
		record(func(tx *store.Tx) error { return tx.EventMailDone(j.mail) })
	}
	return sent, retried, errors.Join(errs...)
}

// compose renders the message telling to of e on the device named name.
func (m *Mailer) compose(to string, e *store.Event, name string, now time.Time) []byte {
	device := e.IMEI
	if name != "" {
		// A device name stays on its line.
		device = strings.NewReplacer("\r", " ", "\n", " ").Replace(name) + " (IMEI " + e.IMEI + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Event %s on %s.\n\n", e.Type, device)
	fmt.Fprintf(&b, "Device:     %s\n", device)
	fmt.Fprintf(&b, "Event type: %s\n", e.Type)
	fmt.Fprintf(&b, "Time:       %s\n", e.Time.UTC().Format("2006-01-02T15:04:05.000Z"))
	fmt.Fprintf(&b, "Location:   %.6f, %.6f\n", e.Lat, e.Lon)
	fmt.Fprintf(&b, "Event:      %s\n", m.link(e))
	fmt.Fprintf(&b, "\nYou receive this e-mail as a notification recipient of %s events on this device.\n", e.Type)
	return alarmmail.Compose(m.o.SMTP.From, to, fmt.Sprintf("[fleetcam] %s on %s", e.Type, device), b.String(), now)
}

// link is the address of e in the API.
func (m *Mailer) link(e *store.Event) string {
	return fmt.Sprintf("%s/v2/devices/%s/events/%d", strings.TrimSuffix(m.o.PublicURL, "/"), e.IMEI, e.ID)
}
