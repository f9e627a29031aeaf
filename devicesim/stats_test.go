package devicesim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

func TestLatencyPercentiles(t *testing.T) {
	for v := uint64(0); v < 1<<22; v = v*9/8 + 1 {
		b := bucketOf(v)
		if top := bucketTop(b); top < v {
			t.Fatalf("value %d lands in bucket %d topping at %d", v, b, top)
		}
		if b > 0 && bucketTop(b-1) >= v {
			t.Fatalf("value %d fits the bucket below %d", v, b)
		}
	}
	var l latencies
	for ms := 1; ms <= 1000; ms++ {
		l.add(time.Duration(ms) * time.Millisecond)
	}
	p := l.percentiles()
	within := func(got, want time.Duration) bool {
		return got >= want && float64(got) <= float64(want)*1.035
	}
	if p.Count != 1000 || !within(p.P50, 500*time.Millisecond) || !within(p.P90, 900*time.Millisecond) ||
		!within(p.P99, 990*time.Millisecond) || p.Max != time.Second || p.P999 > p.Max {
		t.Fatalf("percentiles %+v", p)
	}
	var empty latencies
	if p := empty.percentiles(); p.Count != 0 || p.P99 != 0 {
		t.Fatalf("empty %+v", p)
	}
}

func TestFleetConnectsEveryDevice(t *testing.T) {
	cloud := newFakeCloud(t)
	imeis, err := IMEIs("35693820000000", 6)
	if err != nil {
		t.Fatal(err)
	}
	acks := make(chan Ack, 1024)
	o := testOptions(cloud, "")
	o.GPSInterval, o.GPSBatch = 10*time.Millisecond, 2
	o.RouteOffset = -1
	o.OnAck = func(a Ack) {
		select {
		case acks <- a:
		default:
		}
	}
	f, err := NewFleet(FleetOptions{Device: o, IMEIs: imeis, ConnectRate: 500})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = f.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for _, imei := range imeis {
		cloud.msg(t, imei, protocol.TopicGPS, nil)
	}
	// A device may publish while it is still storing its token grant, so
	// the grant count catches up with the GPS messages a little later.
	var s Snapshot
	waitUntil(t, "every device connected with its grant counted", func() bool {
		s = f.Stats().Snapshot()
		return s.Grants == 6
	})
	if s.FirstConnects != 6 || s.AllConnected <= 0 || s.Grants != 6 || s.Ack.Count == 0 || s.GPSBatches == 0 {
		t.Fatalf("snapshot %+v", s)
	}
	for a := range acks {
		if a.Topic != protocol.TopicGPS {
			continue
		}
		if a.IMEI == "" || a.Key == "" || a.Latency <= 0 || a.At.IsZero() {
			t.Fatalf("ack %+v", a)
		}
		break
	}
	// Devices start at different places on the route.
	p0, p1 := f.Devices()[0].Position(time.Now()), f.Devices()[1].Position(time.Now())
	if p0.Lat == p1.Lat && p0.Lon == p1.Lon {
		t.Fatal("two devices at the same spot")
	}
	if _, err := NewFleet(FleetOptions{Device: o, IMEIs: []string{imeis[0], imeis[0]}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("duplicate imei: %v", err)
	}
}
