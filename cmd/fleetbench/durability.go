package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store"
)

// ackLog keeps every acknowledged GPS message and event of a run, in
// memory and in a file in devicesim's -ack-log format.
type ackLog struct {
	mu   sync.Mutex
	acks []devicesim.Ack
	w    *bufio.Writer
}

func (l *ackLog) record(a devicesim.Ack) {
	if a.Topic != protocol.TopicGPS && a.Topic != protocol.TopicEvent {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acks = append(l.acks, a)
	fmt.Fprintf(l.w, "%d %s %s %s %d\n", a.At.UnixMilli(), a.IMEI, a.Topic, a.Key, a.Latency.Microseconds())
}

// waitAcked waits, up to within, until n messages are acknowledged.
func (l *ackLog) waitAcked(ctx context.Context, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		l.mu.Lock()
		got := len(l.acks)
		l.mu.Unlock()
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d messages acknowledged within %s", got, n, within)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// durability kills fleetcam with SIGKILL under load, durabilityRuns times,
// and checks after each kill that every acknowledged message is in the store.
func (b *bench) durability(ctx context.Context) error {
	sc := b.sc
	fl, err := b.seeded(ctx, "durability", 2*sc.durabilityDevices)
	if err != nil {
		return err
	}
	defer b.dropStorage(ctx, fl.st)
	st := fl.st
	logPath := filepath.Join(b.work, "durability-acks-"+b.engine+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	t := &table{title: fmt.Sprintf("6. Durability: kill -9 under load, %d runs", sc.durabilityRuns),
		cols: []string{"run", "killed after", "acked GPS", "acked events", "lost", "unacked at kill", "restart"}}
	var lostTotal, ackedTotal int
	for run := 1; run <= sc.durabilityRuns; run++ {
		srv, err := b.start(ctx, st)
		if err != nil {
			return fmt.Errorf("run %d: start: %w", run, err)
		}
		log := &ackLog{w: bufio.NewWriter(f)}
		n := sc.durabilityDevices
		common := devicesim.LoadOptions{BrokerURL: srv.brokerURL(), TokenSeed: benchTokenSeed, KeepAlive: 300 * time.Second,
			OnAck: log.record, ReconnectDelay: time.Minute, PublishTimeout: 30 * time.Second}
		gpsOpts, evOpts := common, common
		gpsOpts.IMEIs, gpsOpts.ClosedLoop = fl.imeis[:n], true
		evOpts.IMEIs, evOpts.EventInterval, evOpts.GPSInterval = fl.imeis[n:2*n], 20*time.Millisecond, 250*time.Millisecond
		gpsRun, err := startFleet(ctx, gpsOpts)
		if err != nil {
			srv.kill()
			return err
		}
		evRun, err := startFleet(ctx, evOpts)
		if err != nil {
			gpsRun.stop()
			srv.kill()
			return err
		}
		if err := gpsRun.waitConnected(ctx, n, time.Minute, b.log); err == nil {
			err = evRun.waitConnected(ctx, n, time.Minute, b.log)
		}
		if err == nil {
			// Under load before the kill timer starts, whatever the
			// machine's speed: a check of no acknowledged messages would
			// prove nothing.
			err = log.waitAcked(ctx, 2*n, time.Minute)
		}
		if err != nil {
			gpsRun.stop()
			evRun.stop()
			srv.kill()
			return fmt.Errorf("run %d: %w", run, err)
		}
		// Kill at a different moment of each run.
		after := sc.durabilityLoad/2 + time.Duration(run)*sc.durabilityLoad/time.Duration(2*sc.durabilityRuns)
		if err := sleep(ctx, after); err != nil {
			srv.kill()
			return err
		}
		srv.kill()
		s1, s2 := gpsRun.stop(), evRun.stop()
		unacked := s1.PublishErrors + s2.PublishErrors
		log.mu.Lock()
		acks := append([]devicesim.Ack(nil), log.acks...)
		err = log.w.Flush()
		log.mu.Unlock()
		if err != nil {
			return err
		}
		lost, gps, events, err := verifyAcks(ctx, st, acks)
		if err != nil {
			return fmt.Errorf("run %d: verify: %w", run, err)
		}
		lostTotal += lost
		ackedTotal += gps + events
		// The restart after the kill: fleetcam must come up on the store.
		srv2, err := b.start(ctx, st)
		if err != nil {
			return fmt.Errorf("run %d: restart after kill -9: %w", run, err)
		}
		restart := srv2.startup
		if err := srv2.stop(); err != nil {
			return fmt.Errorf("run %d: stop after restart: %w", run, err)
		}
		t.add(strconv.Itoa(run), after.Round(time.Millisecond).String(), strconv.Itoa(gps), strconv.Itoa(events),
			strconv.Itoa(lost), strconv.FormatInt(unacked, 10), restart.Round(time.Millisecond).String())
		fmt.Fprintf(b.log, "    run %d: %d acknowledged, %d lost\n", run, gps+events, lost)
	}
	verdict := b.rep.target("durability", "acked_messages_lost", float64(lostTotal), "messages", false, 0)
	b.rep.figure("durability", "acked_messages_checked", float64(ackedTotal), "messages")
	t.note("%d acknowledged messages checked against the store after the kills, %d lost: %s", ackedTotal, lostTotal, verdict)
	t.note("load: %d devices publishing GPS back to back + %d devices with 50 events/s and 4 GPS messages/s each; every PUBACK logged in %s",
		sc.durabilityDevices, sc.durabilityDevices, logPath)
	t.note("unacked at kill: publishes without a PUBACK when the server died (in flight or cut off); they may or may not be stored and are not checked")
	b.rep.table(t)
	return nil
}

// verifyAcks opens the store of a killed fleetcam and counts the
// acknowledged messages it lacks: a GPS batch by its first fix's
// millisecond, an event by the device's event id.
func verifyAcks(ctx context.Context, st storage, acks []devicesim.Ack) (lost, gps, events int, err error) {
	db, err := st.open(ctx, store.Options{})
	if err != nil {
		return 0, 0, 0, err
	}
	defer db.Close()
	err = db.View(ctx, func(tx *store.Tx) error {
		for _, a := range acks {
			switch a.Topic {
			case protocol.TopicGPS:
				gps++
				msec, err := strconv.ParseInt(a.Key, 10, 64)
				if err != nil {
					return fmt.Errorf("gps ack key %q: %w", a.Key, err)
				}
				at := time.UnixMilli(msec)
				pts, err := tx.GPS(a.IMEI, at, at, 1)
				if err != nil {
					return err
				}
				if len(pts) == 0 {
					lost++
				}
			case protocol.TopicEvent:
				events++
				msec, err := strconv.ParseInt(strings.TrimPrefix(a.Key, "L"), 10, 64)
				if err != nil {
					return fmt.Errorf("event ack key %q: %w", a.Key, err)
				}
				at := time.UnixMilli(msec)
				evs, _, err := tx.DeviceEvents(a.IMEI, at, at, store.Page{})
				if err != nil {
					return err
				}
				found := false
				for _, e := range evs {
					found = found || e.DeviceEventID == a.Key
				}
				if !found {
					lost++
				}
			}
		}
		return nil
	})
	return lost, gps, events, err
}
