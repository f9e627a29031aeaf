package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
)

// sentEvents records when each acknowledged event was published, while open.
type sentEvents struct {
	open atomic.Bool
	mu   sync.Mutex
	sent map[eventKey]time.Time
}

func (s *sentEvents) ack(a devicesim.Ack) {
	if a.Topic != protocol.TopicEvent || !s.open.Load() {
		return
	}
	s.mu.Lock()
	s.sent[eventKeyOf(a)] = a.At.Add(-a.Latency)
	s.mu.Unlock()
}

// eventKeyOf names the acknowledged event a as the receiver does: its
// id is "L" and its time in unix milliseconds.
func eventKeyOf(a devicesim.Ack) eventKey {
	msec, _ := strconv.ParseInt(strings.TrimPrefix(a.Key, "L"), 10, 64)
	return eventKey{a.IMEI, msec / 1000}
}

// webhook measures device publish → signed webhook delivery at a local
// receiver, with every device also sending GPS once a second.
func (b *bench) webhook(ctx context.Context) error {
	fl, err := b.seeded(ctx, "webhook", b.sc.webhookDevices)
	if err != nil {
		return err
	}
	defer b.dropStorage(ctx, fl.st)
	srv, err := b.start(ctx, fl.st)
	if err != nil {
		return err
	}
	defer srv.stop()
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.close()
	api, err := newAPIClient(ctx, srv)
	if err != nil {
		return err
	}
	if err := subscribeReceiver(ctx, api, fl.orgID, rcv); err != nil {
		return err
	}

	n := b.sc.webhookDevices
	t := &table{title: fmt.Sprintf("3. Event → webhook: device publish to verified delivery, %d devices × 1 Hz GPS", n),
		cols: []string{"events/s", "acked", "delivered", "p50", "p99", "max", "fleetcam CPU", "target"}}
	for _, rate := range b.sc.webhookRates {
		sent := &sentEvents{sent: map[eventKey]time.Time{}}
		fr, err := startFleet(ctx, devicesim.LoadOptions{
			BrokerURL: srv.brokerURL(), IMEIs: fl.imeis, TokenSeed: benchTokenSeed, ConnectConcurrency: 256,
			KeepAlive: 300 * time.Second, GPSInterval: time.Second,
			EventInterval: time.Duration(float64(n) / rate * float64(time.Second)), OnAck: sent.ack,
		})
		if err != nil {
			return err
		}
		if err := fr.waitConnected(ctx, n, 2*time.Minute, b.log); err != nil {
			fr.stop()
			return err
		}
		if err := sleep(ctx, b.sc.warmup); err != nil {
			fr.stop()
			return err
		}
		b.profile(ctx, srv, b.sc.webhookWindow, fmt.Sprintf("webhook-%g", rate))
		cpu := startCPU(srv.cmd.Process.Pid)
		sent.open.Store(true)
		err = sleep(ctx, b.sc.webhookWindow)
		sent.open.Store(false)
		srvCores, _ := cpu.cores()
		fr.stop()
		if err != nil {
			return err
		}
		if _, err := srv.settle(ctx, 5*time.Minute); err != nil {
			return err
		}
		sent.mu.Lock()
		keys := make(map[eventKey]time.Time, len(sent.sent))
		for k, v := range sent.sent {
			keys[k] = v
		}
		sent.mu.Unlock()
		// Wait for the deliveries still under way: they end as soon as
		// every one has arrived, and a busy machine may take a while.
		deadline := time.Now().Add(2 * time.Minute)
		var lat []time.Duration
		for {
			lat = lat[:0]
			for k, at := range keys {
				if got, ok := rcv.arrivedAt(k); ok {
					lat = append(lat, got.Sub(at))
				}
			}
			if len(lat) == len(keys) || time.Now().After(deadline) {
				break
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
		p := percentiles(lat)
		verdict := ""
		if rate >= 100 || len(b.sc.webhookRates) == 1 {
			verdict = b.rep.target("webhook", "publish_to_webhook_p99", ms(p.p99), "ms", false, 250)
		}
		b.rep.figure("webhook", fmt.Sprintf("p50_at_%g_per_s", rate), ms(p.p50), "ms")
		b.rep.figure("webhook", fmt.Sprintf("p99_at_%g_per_s", rate), ms(p.p99), "ms")
		b.rep.figure("webhook", fmt.Sprintf("delivered_at_%g_per_s", rate), float64(len(lat)), "events")
		b.rep.figure("webhook", fmt.Sprintf("acked_at_%g_per_s", rate), float64(len(keys)), "events")
		t.add(num(rate), strconv.Itoa(len(keys)), strconv.Itoa(len(lat)), msf(p.p50), msf(p.p99), msf(p.max),
			fmt.Sprintf("%.2f cores", srvCores), verdict)
		fmt.Fprintf(b.log, "    %g events/s: %d of %d delivered, p99 %s\n", rate, len(lat), len(keys), msf(p.p99))
	}
	bad, dupes, other := rcv.counts()
	b.rep.figure("webhook", "bad_signatures", float64(bad), "deliveries")
	t.note("every delivery's Standard Webhooks signature verified: %d failed, %d repeated events, %d other messages",
		bad, dupes, other)
	t.note("latency from the device writing PUBLISH to the receiver reading the request; windows of %s", b.sc.webhookWindow)
	b.rep.table(t)
	return nil
}
