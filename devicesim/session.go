package devicesim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// errStopping reports work cut short because the device is stopping.
var errStopping = errors.New("devicesim: device stopping")

// errWentOffline reports a publish cut short because the device chose to
// drop its connection (a scripted offline step, a reboot or a reset): the
// message stays queued for the next connection, and nothing failed.
var errWentOffline = errors.New("devicesim: device went offline")

// pending is a message kept while the device is offline.
type pending struct {
	Suffix  string
	Payload []byte
	Key     string
	seq     uint64
}

// Run connects the device and keeps it connected, reconnecting with
// back-off, until ctx ends; it also drives GPS, random events and the
// scenario, which keep running (and queue) while the device is offline.
// Run returns nil when ctx ends; a device runs once.
func (d *Device) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return fmt.Errorf("devicesim: device %s is already running: %w", d.o.IMEI, ErrInvalidOptions)
	}
	d.mu.Lock()
	d.started = d.now()
	d.mu.Unlock()

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	start(d.work)
	if d.o.GPSInterval > 0 {
		start(d.runGPS)
	}
	if d.o.EventRate > 0 {
		start(d.runRandomEvents)
	}
	if d.o.Scenario != nil {
		start(func(ctx context.Context) { d.runScenario(ctx, d.o.Scenario) })
	}
	defer d.stopLiveStreams()

	attempt := 0
	for ctx.Err() == nil {
		if wait := d.offlineWait(); wait > 0 {
			if !d.sleep(ctx, wait) {
				break
			}
			continue
		}
		up, err := d.session(ctx)
		if ctx.Err() != nil {
			break
		}
		if up {
			attempt = 0
			if err == nil {
				continue // asked to go down (offline, reboot, reset): the wait is in offlineWait
			}
		}
		if err != nil {
			d.setErr(err)
			d.log.Debug("connection", "err", err)
		}
		attempt++
		if !d.sleep(ctx, d.backoff(attempt)) {
			break
		}
	}
	return nil
}

// offlineWait returns how long the device must stay off the network.
func (d *Device) offlineWait() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.offlineUntil.Sub(d.now())
}

// sleep waits for dur, a wake-up or the end of ctx; false when ctx ended.
func (d *Device) sleep(ctx context.Context, dur time.Duration) bool {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-d.wake:
	case <-t.C:
	}
	return true
}

// backoff is the delay before reconnect attempt n: exponential, capped at
// 30s, with up to 50% jitter so a fleet does not reconnect in lockstep.
func (d *Device) backoff(n int) time.Duration {
	b := d.o.ReconnectDelay
	for i := 1; i < n && b < 30*time.Second; i++ {
		b *= 2
	}
	b = min(b, 30*time.Second)
	return b/2 + time.Duration(d.randFloat()*float64(b/2))
}

// password returns the CONNECT password and whether it is a bootstrap.
func (d *Device) password() (string, bool) {
	if d.legacy {
		return protocol.LegacyPrefix + d.o.Firmware, false
	}
	d.mu.Lock()
	tok := d.st.Token
	d.mu.Unlock()
	if tok != "" {
		return tok, false
	}
	return protocol.BootstrapPassword(d.factory, d.o.IMEI, d.now()), true
}

// session runs one connection: connect, subscribe, bootstrap if needed,
// status, outbox flush, then wait until it ends. up reports whether the
// connection was established; err is nil when the device chose to end it.
func (d *Device) session(ctx context.Context) (up bool, err error) {
	u, _ := parseBrokerURL(d.o.BrokerURL)
	pass, bootstrap := d.password()
	cfg := dialConfig{
		URL: u, ClientID: d.o.IMEI, Username: d.o.IMEI, Password: pass,
		Clean: d.o.CleanSession, SessionExpiry: d.o.SessionExpiry, KeepAlive: d.o.KeepAlive,
		ReceiveMax: d.o.ReceiveMaximum, Timeout: d.o.ConnectTimeout,
		Filter:    protocol.DownFilter(d.o.IMEI),
		OnMessage: d.inbox.push,
	}
	dial := dial5
	if d.o.MQTTVersion == v311 {
		dial = dial311
	}
	select { // drop a stale grant signal from an earlier session
	case <-d.granted:
	default:
	}
	began := time.Now()
	l, err := dial(ctx, cfg)
	if err != nil {
		d.stats.connectFailed(errors.Is(err, ErrRefused))
		return false, err
	}
	d.stats.connected(time.Since(began), !d.everUp.Swap(true))
	d.mu.Lock()
	d.link = l
	d.lastErr = nil
	close(d.up)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.link = nil
		d.up = make(chan struct{})
		d.mu.Unlock()
		d.stats.disconnected()
	}()
	d.log.Debug("connected", "bootstrap", bootstrap, "sessionPresent", l.sessionPresent())

	if bootstrap {
		t := time.NewTimer(d.o.GrantTimeout)
		select {
		case <-d.granted:
			t.Stop()
		case <-t.C:
			l.disconnect()
			return true, fmt.Errorf("devicesim: no token grant within %s of the bootstrap", d.o.GrantTimeout)
		case <-l.done():
			t.Stop()
			return true, fmt.Errorf("devicesim: connection lost while waiting for the token grant")
		case <-ctx.Done():
			t.Stop()
			l.disconnect()
			return true, nil
		}
	}
	if err := d.publishStatus(ctx); err != nil {
		d.setErr(err)
	}
	if err := d.flushOutbox(ctx); err != nil {
		d.setErr(err)
	}

	select {
	case <-ctx.Done():
		l.disconnect()
		return true, nil
	case <-l.done():
		d.mu.Lock()
		chosen := d.offlineUntil.After(d.now())
		d.mu.Unlock()
		if chosen {
			return true, nil
		}
		return true, fmt.Errorf("devicesim: connection lost")
	}
}

// current returns the connection in use, or nil.
func (d *Device) current() link {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.link
}

// send publishes payload to the device topic suffix on l and accounts for it.
func (d *Device) send(ctx context.Context, l link, topic, suffix string, payload, correlation []byte, key string) error {
	pctx, cancel := context.WithTimeout(ctx, d.o.PublishTimeout)
	defer cancel()
	began := time.Now()
	if err := l.publish(pctx, topic, payload, correlation); err != nil {
		if ctx.Err() != nil {
			return errStopping // the device is shutting down; not a broker failure
		}
		if d.offlineWait() > 0 {
			return errWentOffline
		}
		d.stats.publishFailed()
		if pctx.Err() != nil {
			return fmt.Errorf("devicesim: publish %s: no PUBACK within %s", suffix, d.o.PublishTimeout)
		}
		return fmt.Errorf("devicesim: publish %s: %w", suffix, err)
	}
	lat := time.Since(began)
	d.stats.sent(suffix, lat)
	d.mu.Lock()
	d.bytesUp += int64(len(payload))
	d.mu.Unlock()
	if d.o.OnAck != nil {
		d.o.OnAck(Ack{IMEI: d.o.IMEI, Topic: suffix, Key: key, Latency: lat, At: d.now()})
	}
	return nil
}

// publishNow publishes v on the device topic suffix, failing when offline.
func (d *Device) publishNow(ctx context.Context, suffix string, v any) error {
	l := d.current()
	if l == nil {
		return ErrOffline
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("devicesim: encode %s: %w", suffix, err)
	}
	return d.send(ctx, l, protocol.Topic(d.o.IMEI, suffix), suffix, raw, nil, "")
}

// publishOrQueue publishes v, or keeps it for the next connection when the
// device is offline or the publish fails (at-least-once, like a dashcam's
// store and forward). Queued messages go out in order. key identifies the
// message in Ack records.
func (d *Device) publishOrQueue(ctx context.Context, suffix string, v any, key string) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("devicesim: encode %s: %w", suffix, err)
	}
	d.enqueue(pending{Suffix: suffix, Payload: raw, Key: key})
	return d.flushOutbox(ctx)
}

// enqueue keeps p for later, dropping the oldest beyond the limit.
func (d *Device) enqueue(p pending) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.outSeq++
	p.seq = d.outSeq
	d.outbox = append(d.outbox, p)
	if over := len(d.outbox) - d.o.OutboxLimit; over > 0 {
		d.outbox = append(d.outbox[:0:0], d.outbox[over:]...)
		d.stats.dropped.Add(int64(over))
	}
}

// flushOutbox sends queued messages on the current connection, oldest
// first, until the queue is empty, the device is offline or a publish fails
// on a connection that is still the current one. One goroutine flushes at a
// time; others return at once and their messages go out with that flush.
func (d *Device) flushOutbox(ctx context.Context) error {
	d.mu.Lock()
	if d.flushing {
		d.mu.Unlock()
		return nil
	}
	d.flushing = true
	d.mu.Unlock()
	for {
		d.mu.Lock()
		l := d.link
		if len(d.outbox) == 0 || l == nil || ctx.Err() != nil {
			d.flushing = false
			d.mu.Unlock()
			return ctx.Err()
		}
		p := d.outbox[0]
		d.mu.Unlock()
		err := d.send(ctx, l, protocol.Topic(d.o.IMEI, p.Suffix), p.Suffix, p.Payload, nil, p.Key)
		d.mu.Lock()
		if errors.Is(err, errWentOffline) {
			d.flushing = false
			d.mu.Unlock()
			return nil // still queued: it goes out after the device is back
		}
		if err != nil {
			if d.link == l || d.link == nil {
				d.flushing = false
				d.mu.Unlock()
				return err
			}
			d.mu.Unlock()
			continue // reconnected meanwhile: go on with the new connection
		}
		if len(d.outbox) > 0 && d.outbox[0].seq == p.seq {
			d.outbox[0] = pending{}
			d.outbox = d.outbox[1:]
		}
		d.mu.Unlock()
	}
}

// Pending returns the number of messages kept for the next connection.
func (d *Device) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.outbox)
}

// publishStatus reports the device's health.
func (d *Device) publishStatus(ctx context.Context) error {
	return d.publishNow(ctx, protocol.TopicStatus, d.Status())
}

// GoOffline drops the network connection without DISCONNECT, as a lost
// signal does, and keeps the device off the network for dur. The device
// keeps recording and queues GPS and events meanwhile.
func (d *Device) GoOffline(dur time.Duration) {
	d.mu.Lock()
	d.offlineUntil = d.now().Add(dur)
	l := d.link
	d.mu.Unlock()
	if l != nil {
		l.abort()
	}
}

// ComeBack ends an offline period early.
func (d *Device) ComeBack() {
	d.mu.Lock()
	d.offlineUntil = time.Time{}
	d.mu.Unlock()
	signal(d.wake)
}

// Reboot disconnects cleanly, leaves a gap in the recordings and reconnects
// after the reboot delay.
func (d *Device) Reboot() {
	now := d.now()
	d.mu.Lock()
	d.offlineUntil = now.Add(d.o.RebootDelay)
	l := d.link
	d.mu.Unlock()
	d.rec.gap(now, d.o.RebootDelay)
	d.stopLiveStreams()
	if l != nil {
		l.disconnect()
	}
}

// FactoryReset drops the token, every setting and the messages not sent
// yet (the SD card and its recordings stay), disconnects, and bootstraps
// again on the next connection.
func (d *Device) FactoryReset() {
	now := d.now()
	d.mu.Lock()
	d.st = persisted{IMEI: d.o.IMEI, SDCard: d.st.SDCard, HotspotPassword: DefaultHotspotPassword}
	d.persistLocked()
	d.privacyMode = ""
	d.driver = nil
	d.wrongPins = nil
	d.adasFiles, d.adasDone = nil, false
	d.control = controlState{}
	d.fences = map[int64]bool{}
	// The reset wipes what the dashcam had not sent yet: fixes and events
	// recorded before it are no new owner's.
	d.outbox = nil
	d.epoch = strconv.FormatInt(now.UnixNano(), 36)
	d.offlineUntil = now.Add(d.o.RebootDelay)
	l := d.link
	d.mu.Unlock()
	d.rec.gap(now, d.o.RebootDelay)
	d.applyRecordingAt(now.Add(d.o.RebootDelay)) // settings are gone: every camera records again
	d.stopLiveStreams()
	if l != nil {
		l.disconnect()
	}
}
