package devicesim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// loadDevice is one light dashcam of a LoadFleet.
type loadDevice struct {
	f       *LoadFleet
	imei    string
	seed    uint64
	factory []byte

	mu       sync.Mutex
	addr     int // the index in the fleet's URLs of the broker to connect to
	token    string
	gen      uint64 // connection generation; a callback of an older one is ignored
	cli      *paho.Client
	cancel   context.CancelFunc // ends the current connection's publishes
	alive    context.Context
	ever     bool
	attempts int
	inflight int
	lastFix  int64 // unix ms of the last fix sent, so every fix has its own millisecond
	lastEvt  int64
	evtSeq   int
	armed    bool
	jitter   uint64
	// retry, gps and evt are the device's timers: the next connection
	// attempt and the next GPS message and event.
	retry, gps, evt *time.Timer
}

// loadEventTypes are driving events the default configuration enables.
var loadEventTypes = []string{"deceleration", "acceleration", "sharpTurnLeft", "sharpRightTurn", "gsensorRegular", "button"}

// password returns the CONNECT password and whether it is a bootstrap.
func (d *loadDevice) password() (string, bool) {
	if d.f.legacy {
		return protocol.LegacyPrefix + d.f.o.Firmware, false
	}
	d.mu.Lock()
	tok := d.token
	d.mu.Unlock()
	if tok != "" {
		return tok, false
	}
	return protocol.BootstrapPassword(d.factory, d.imei, time.Now()), true
}

// rand01 returns a pseudo-random number in [0, 1) from the device's seed.
func (d *loadDevice) rand01() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.jitter++
	return float64(mix64(d.seed+d.jitter)>>11) / (1 << 53)
}

// mix64 is the splitmix64 finalizer: nearby inputs (such as the hashes of
// consecutive IMEIs) give unrelated outputs.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// connect makes one connection attempt; held says the caller already holds
// a slot of the fleet's connect semaphore. On failure it schedules the next
// attempt with back-off.
func (d *loadDevice) connect(held bool) {
	f := d.f
	if !held {
		select {
		case f.sem <- struct{}{}:
		case <-f.ctx.Done():
			return
		}
	}
	err := d.dial()
	<-f.sem
	if err == nil || f.ctx.Err() != nil {
		return
	}
	f.stats.connectFailed(errors.Is(err, ErrRefused))
	f.stats.setLastError(d.imei, err)
	var ref *RefusedError
	if errors.As(err, &ref) && ref.Code == 0x86 && d.factory != nil {
		d.mu.Lock()
		d.token = "" // refused token: bootstrap on the next attempt
		d.mu.Unlock()
	}
	d.mu.Lock()
	d.attempts++
	n := d.attempts
	d.nextAddr()
	d.mu.Unlock()
	d.reconnectAfter(f.backoff(n, d.rand01()))
}

// nextAddr moves the device on to the next broker address of the fleet,
// as a dashcam does after a lost connection or a failed attempt; d.mu is held.
func (d *loadDevice) nextAddr() { d.addr = (d.addr + 1) % len(d.f.urls) }

// reconnectAfter schedules the next connection attempt.
func (d *loadDevice) reconnectAfter(delay time.Duration) {
	t := d.f.schedule(delay, func() { d.connect(false) })
	d.mu.Lock()
	d.retry = t
	d.mu.Unlock()
}

// dial connects, subscribes when the session needs it and starts publishing.
func (d *loadDevice) dial() error {
	f := d.f
	ctx, cancel := context.WithTimeout(f.ctx, f.o.ConnectTimeout)
	defer cancel()
	began := time.Now()
	pass, bootstrap := d.password()
	d.mu.Lock()
	u := f.urls[d.addr]
	d.mu.Unlock()
	conn, err := dialNet(ctx, dialConfig{URL: u})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.gen++
	gen := d.gen
	d.mu.Unlock()
	lost := func() { d.lost(gen) }
	cli := paho.NewClient(paho.ClientConfig{
		ClientID:           d.imei,
		Conn:               conn,
		PacketTimeout:      f.o.PublishTimeout,
		OnPublishReceived:  []func(paho.PublishReceived) (bool, error){d.received},
		OnClientError:      func(error) { lost() },
		OnServerDisconnect: func(*paho.Disconnect) { lost() },
	})
	recv := f.o.ReceiveMaximum
	cp := &paho.Connect{
		ClientID: d.imei, KeepAlive: uint16(f.o.KeepAlive / time.Second), CleanStart: f.o.CleanStart,
		Username: d.imei, UsernameFlag: true, Password: []byte(pass), PasswordFlag: true,
		Properties: &paho.ConnectProperties{ReceiveMaximum: &recv, RequestProblemInfo: true},
	}
	if !f.o.CleanStart {
		exp := uint32(f.o.SessionExpiry / time.Second)
		cp.Properties.SessionExpiryInterval = &exp
	}
	ca, err := cli.Connect(ctx, cp)
	if err != nil {
		_ = conn.Close()
		if ca != nil && ca.ReasonCode >= 0x80 {
			reason := ""
			if ca.Properties != nil {
				reason = ca.Properties.ReasonString
			}
			return refused5(ca.ReasonCode, reason)
		}
		return err
	}
	if !ca.SessionPresent || bootstrap {
		filter := protocol.DownFilter(d.imei)
		sa, err := cli.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
		if err == nil && (len(sa.Reasons) != 1 || sa.Reasons[0] >= 0x80) {
			err = refused5(0x80, "subscribe "+filter)
		}
		if err != nil {
			_ = conn.Close()
			return err
		}
	}
	alive, stop := context.WithCancel(f.ctx)
	d.mu.Lock()
	if d.gen != gen { // lost while subscribing
		d.mu.Unlock()
		stop()
		_ = conn.Close()
		return errLinkClosed
	}
	first := !d.ever
	d.ever, d.attempts = true, 0
	d.cli, d.cancel, d.alive = cli, stop, alive
	arm := !d.armed
	d.armed = true
	d.mu.Unlock()
	f.stats.connected(time.Since(began), first)
	if f.o.OnConnect != nil {
		f.o.OnConnect(d.imei, u.String())
	}
	if !f.o.NoStatus {
		d.goPublish(func() { d.publishStatus(cli, alive) })
	}
	if f.o.ClosedLoop {
		for range f.o.Window {
			d.goPublish(func() { d.closedLoop(cli, alive) })
		}
	} else if arm {
		d.arm()
	}
	return nil
}

// goPublish runs fn in its own goroutine, tracked by the fleet.
func (d *loadDevice) goPublish(fn func()) { d.f.spawn(fn) }

// lost handles the end of connection gen: publishes on it are abandoned
// and a reconnect is scheduled.
func (d *loadDevice) lost(gen uint64) {
	d.mu.Lock()
	if d.gen != gen {
		d.mu.Unlock()
		return
	}
	if d.cli == nil {
		// Lost while still being set up: move on a generation so that the
		// setup sees it and does not count a dead connection as online.
		d.gen++
		d.mu.Unlock()
		return
	}
	d.cli = nil
	d.cancel()
	d.attempts++
	n := d.attempts
	d.nextAddr()
	d.mu.Unlock()
	d.f.stats.disconnected()
	if d.f.stopping.Load() {
		return
	}
	d.f.stats.setLastError(d.imei, errors.New("devicesim: connection lost"))
	d.reconnectAfter(d.f.backoff(n, d.rand01()))
}

// stop ends the device's timers and connection when the fleet stops.
func (d *loadDevice) stop() {
	d.mu.Lock()
	for _, t := range []*time.Timer{d.retry, d.gps, d.evt} {
		if t != nil {
			t.Stop()
		}
	}
	cli, gen := d.cli, d.gen
	d.mu.Unlock()
	if cli != nil {
		_ = cli.Disconnect(&paho.Disconnect{ReasonCode: 0})
	}
	d.lost(gen)
}

// current returns the live connection and its context, or nil.
func (d *loadDevice) current() (*paho.Client, context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cli, d.alive
}

// arm starts the GPS and event timers, each at a random phase of its
// period so that the fleet's messages spread evenly over time.
func (d *loadDevice) arm() {
	o := d.f.o
	if o.GPSInterval > 0 {
		every := o.GPSInterval * time.Duration(o.GPSBatch)
		t := d.every(every, time.Duration(d.rand01()*float64(every)), d.sendGPS)
		d.mu.Lock()
		d.gps = t
		d.mu.Unlock()
	}
	if o.EventInterval > 0 {
		t := d.every(o.EventInterval, time.Duration(d.rand01()*float64(o.EventInterval)), d.sendEvent)
		d.mu.Lock()
		d.evt = t
		d.mu.Unlock()
	}
}

// every runs send every period from first on, keeping the cadence: a run
// that is late does not delay the next ones, and runs missed entirely are
// skipped. It returns the timer that drives it.
func (d *loadDevice) every(period, first time.Duration, send func(*paho.Client, context.Context)) *time.Timer {
	var (
		mu   sync.Mutex
		next = time.Now().Add(first)
		t    *time.Timer
	)
	tick := func() {
		mu.Lock()
		next = next.Add(period)
		if now := time.Now(); next.Before(now) {
			next = now.Add(period)
		}
		t.Reset(time.Until(next))
		mu.Unlock()
		cli, alive := d.current()
		d.mu.Lock()
		full := d.inflight >= d.f.o.Window
		if cli != nil && !full {
			d.inflight++
		}
		d.mu.Unlock()
		if cli == nil || full {
			d.f.stats.skipped.Add(1)
			return
		}
		send(cli, alive)
		d.mu.Lock()
		d.inflight--
		d.mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	t = d.f.schedule(first, tick)
	return t
}

// closedLoop publishes GPS messages back to back until the connection ends.
func (d *loadDevice) closedLoop(cli *paho.Client, alive context.Context) {
	for alive.Err() == nil {
		d.sendGPS(cli, alive)
	}
}

// sendGPS publishes one GPS batch of GPSBatch fixes ending now.
func (d *loadDevice) sendGPS(cli *paho.Client, alive context.Context) {
	o := d.f.o
	now := time.Now()
	samples := make([]protocol.GPSSample, o.GPSBatch)
	d.mu.Lock()
	for i := range samples {
		t := now.Add(-time.Duration(o.GPSBatch-1-i) * o.GPSInterval).UnixMilli()
		t = max(t, d.lastFix+1)
		d.lastFix = t
		samples[i].Time = t
	}
	d.mu.Unlock()
	for i := range samples {
		p := o.Route.At(time.Duration(samples[i].Time)*time.Millisecond + time.Duration(d.seed%uint64(o.Route.Duration())))
		samples[i].Lat, samples[i].Lon = round6(p.Lat), round6(p.Lon)
		samples[i].Alt, samples[i].Speed = math.Round(p.Alt*10)/10, math.Round(p.Speed*10)/10
		samples[i].Accuracy, samples[i].Heading = 3.5, math.Round(p.Heading)
	}
	d.f.stats.gpsSamples.Add(int64(len(samples)))
	raw, _ := json.Marshal(protocol.GPSBatch{Samples: samples})
	d.publish(cli, alive, protocol.TopicGPS, raw, strconv.FormatInt(samples[0].Time, 10))
}

// sendEvent publishes one driving event without media. Its id is "L"
// followed by its time in unix milliseconds, unique per device.
func (d *loadDevice) sendEvent(cli *paho.Client, alive context.Context) {
	now := time.Now()
	d.mu.Lock()
	t := max(now.UnixMilli(), d.lastEvt+1)
	d.lastEvt = t
	typ := loadEventTypes[(d.seed+uint64(d.evtSeq))%uint64(len(loadEventTypes))]
	d.evtSeq++
	d.mu.Unlock()
	p := d.f.o.Route.At(time.Duration(t)*time.Millisecond + time.Duration(d.seed%uint64(d.f.o.Route.Duration())))
	ev := protocol.Event{ID: "L" + strconv.FormatInt(t, 10), Type: typ, Time: t, Lat: round6(p.Lat), Lon: round6(p.Lon),
		Alt: math.Round(p.Alt*10) / 10, Speed: math.Round(p.Speed*10) / 10, Accuracy: 4,
		Samples: []protocol.Sample{{X: -0.4, Y: -5.8, Z: 9.8, Time: t / 1000, Speed: p.Speed / 3.6}}}
	raw, _ := json.Marshal(ev)
	d.f.stats.events.Add(1)
	d.publish(cli, alive, protocol.TopicEvent, raw, ev.ID)
}

// publishStatus reports the device's health after connecting.
func (d *loadDevice) publishStatus(cli *paho.Client, alive context.Context) {
	power := true
	raw, _ := json.Marshal(protocol.Status{Firmware: d.f.o.Firmware, ProductType: DefaultProductType, State: "online",
		PowerConnected: &power, RecordingTest: "passed",
		Cameras: []protocol.Camera{{ID: 1, Connected: true}, {ID: 2, Connected: true}}})
	d.publish(cli, alive, protocol.TopicStatus, raw, "")
}

// publish sends payload at QoS 1 and waits for the PUBACK, accounting for it.
func (d *loadDevice) publish(cli *paho.Client, alive context.Context, suffix string, payload []byte, key string) {
	f := d.f
	ctx, cancel := context.WithTimeout(alive, f.o.PublishTimeout)
	defer cancel()
	began := time.Now()
	_, err := cli.Publish(ctx, &paho.Publish{QoS: 1, Topic: protocol.Topic(d.imei, suffix), Payload: payload})
	if err != nil {
		if f.stopping.Load() || f.ctx.Err() != nil {
			return // the fleet is stopping: not a broker failure
		}
		f.stats.publishFailed()
		if alive.Err() != nil {
			err = errLinkClosed
		} else if ctx.Err() != nil {
			err = errors.New("devicesim: publish " + suffix + ": no PUBACK within " + f.o.PublishTimeout.String())
		}
		f.stats.setLastError(d.imei, err)
		return
	}
	lat := time.Since(began)
	f.stats.sent(suffix, lat)
	if f.o.OnAck != nil {
		f.o.OnAck(Ack{IMEI: d.imei, Topic: suffix, Key: key, Latency: lat, At: began.Add(lat)})
	}
}

// received handles what the broker sends, in paho's delivery goroutine: it
// must not wait for its own PUBACKs there, so answers go out in their own goroutine.
func (d *loadDevice) received(pr paho.PublishReceived) (bool, error) {
	f := d.f
	f.stats.received.Add(1)
	_, suffix, _ := protocol.SplitTopic(pr.Packet.Topic)
	if f.o.OnReceive != nil {
		f.o.OnReceive(d.imei, suffix, pr.Packet.Payload)
	}
	cli := pr.Client
	_, alive := d.current()
	if alive == nil {
		alive = f.ctx
	}
	switch suffix {
	case protocol.TopicToken:
		var g protocol.TokenGrant
		if json.Unmarshal(pr.Packet.Payload, &g) != nil || g.Token == "" {
			return true, nil
		}
		d.mu.Lock()
		d.token = g.Token
		d.mu.Unlock()
		f.stats.grants.Add(1)
		if f.o.StateDir != "" {
			st, err := loadState(f.o.StateDir, d.imei)
			if err == nil {
				st.Token, st.TokenIssuedAt = g.Token, g.IssuedAt
				err = saveState(f.o.StateDir, st)
			}
			if err != nil {
				f.stats.setLastError(d.imei, err)
			}
		}
	case protocol.TopicConfig:
		var c struct {
			Version int64 `json:"version"`
		}
		if json.Unmarshal(pr.Packet.Payload, &c) != nil {
			return true, nil
		}
		raw, _ := json.Marshal(protocol.ConfigAck{Version: c.Version})
		d.goPublish(func() {
			d.publish(cli, alive, protocol.TopicConfigAck, raw, "")
			f.stats.configAcks.Add(1)
		})
	case protocol.TopicCommand:
		var c protocol.Command
		if json.Unmarshal(pr.Packet.Payload, &c) != nil {
			return true, nil
		}
		f.stats.commands.Add(1)
		raw, _ := json.Marshal(protocol.Reply{ID: c.ID, OK: false, Error: "commands are not simulated in load mode"})
		d.goPublish(func() { d.publish(cli, alive, protocol.TopicReply, raw, c.ID) })
	}
	return true, nil
}
