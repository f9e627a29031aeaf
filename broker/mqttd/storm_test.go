package mqttd

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
)

// TestTakeoverStorm connects the same few clients from many goroutines at
// once while the server publishes to them, and checks what must hold
// whatever the interleaving: at most one connection per client is online
// at a time, every Online is followed by one Closed, and the server ends
// with no connection, no message in flight it cannot account for, and no
// goroutine stuck.
func TestTakeoverStorm(t *testing.T) {
	const (
		clients    = 6
		dialers    = 5 // per client
		rounds     = 8 // per dialer
		messageFor = 20 * time.Millisecond
	)
	e := newEnv(t, Options{ConnectTimeout: 2 * time.Second})
	var (
		mu      sync.Mutex
		live    = map[string]int{}
		online  = map[*Conn]bool{}
		onlines int
		closes  int
	)
	e.h.set(func(h *handler) {
		h.online = func(c *Conn) {
			mu.Lock()
			defer mu.Unlock()
			if live[c.ID()]++; live[c.ID()] > 1 {
				t.Errorf("%s: %d connections online at once", c.ID(), live[c.ID()])
			}
			online[c] = true
			onlines++
		}
		h.closing = func(c *Conn) {
			mu.Lock()
			defer mu.Unlock()
			if online[c] {
				live[c.ID()]--
				delete(online, c)
				closes++
			}
		}
	})

	stop := make(chan struct{})
	var publisher sync.WaitGroup
	publisher.Add(1)
	go func() { // the server publishes to every client meanwhile
		defer publisher.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				id := fmt.Sprintf("cam%d", i%clients)
				_, _ = e.srv.Publish(id, id+"/down", []byte("m"), nil)
			}
		}
	}()

	var wg sync.WaitGroup
	for c := range clients {
		id := fmt.Sprintf("cam%d", c)
		for d := range dialers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					storm(t, e.addr, id, byte(4+(d+r)%2), messageFor)
				}
			}()
		}
	}
	wg.Wait()
	close(stop)
	publisher.Wait()

	waitFor(t, "every connection to end", func() bool { return e.conns() == 0 })
	mu.Lock()
	defer mu.Unlock()
	if onlines == 0 || onlines != closes {
		t.Errorf("Online %d times, Closed after Online %d times", onlines, closes)
	}
	if n := e.srv.Info().ClientsConnected.Load(); n != 0 {
		t.Errorf("ClientsConnected = %d after every connection ended", n)
	}
	if e.srv.Sessions() > clients {
		t.Errorf("%d sessions for %d client ids", e.srv.Sessions(), clients)
	}
}

// storm is one connection of TestTakeoverStorm: CONNECT (MQTT version,
// alternately resuming and starting clean), SUBSCRIBE, acknowledge what
// arrives for a while, then leave, politely or not. A newer connection of
// the same client may end it at any point; errors are expected and ignored.
func storm(t *testing.T, addr, id string, version byte, stay time.Duration) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer nc.Close()
	rc := mqtttest.New(t, nc, version)
	connect := mqtttest.ConnectPacket(id, func(pk *packets.Packet) {
		pk.Connect.Clean = time.Now().UnixNano()%3 == 0
		if version == 5 {
			pk.Properties.SessionExpiryInterval, pk.Properties.SessionExpiryIntervalFlag = 60, true
		}
	})
	subscribe := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Subscribe, Qos: 1}, PacketID: 1,
		Filters: packets.Subscriptions{{Filter: id + "/down", Qos: 1}}}
	if _, err := nc.Write(append(rc.Encode(connect), rc.Encode(subscribe)...)); err != nil {
		return
	}
	deadline := time.Now().Add(stay)
	for time.Now().Before(deadline) {
		pk, err := rc.ReadWithin(time.Until(deadline))
		if err != nil {
			break
		}
		if pk.FixedHeader.Type == packets.Publish && pk.FixedHeader.Qos == 1 {
			ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: pk.PacketID}
			if _, err := nc.Write(rc.Encode(ack)); err != nil {
				return
			}
		}
	}
	if time.Now().UnixNano()%2 == 0 {
		_, _ = nc.Write(rc.Encode(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}}))
	}
}
