package broker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/fleetcam/fleetcam/broker/protocol"
)

// Benchmarks of the ingest hot path that runs in each device's read loop:
// decoding and validating a payload into the write that stores it. They
// run only with -bench:
//
//	go test -run '^$' -bench . -benchtime 200ms ./broker

func benchPublish(b *testing.B, suffix string, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{}
	l := &link{imei: imei(1)}
	pk := packets.Packet{TopicName: protocol.Topic(l.imei, suffix), Payload: raw}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		job, _, code := s.ingestJob(l, suffix, &pk)
		if job == nil || code != (packets.Code{}) {
			b.Fatalf("refused: %v", code)
		}
	}
}

func gpsBatch(n int) protocol.GPSBatch {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	var gb protocol.GPSBatch
	for i := range n {
		gb.Samples = append(gb.Samples, protocol.GPSSample{Time: t0 + int64(i)*1000, Lat: 52.37403, Lon: 4.88969,
			Alt: 2.5, Speed: 48.2, Accuracy: 3.9, Heading: 271})
	}
	return gb
}

func BenchmarkDecodeGPS(b *testing.B) {
	b.Run("1fix", func(b *testing.B) { benchPublish(b, protocol.TopicGPS, gpsBatch(1)) })
	b.Run("60fixes", func(b *testing.B) { benchPublish(b, protocol.TopicGPS, gpsBatch(60)) })
}

func BenchmarkDecodeEvent(b *testing.B) {
	benchPublish(b, protocol.TopicEvent, protocol.Event{ID: "e-000173", Type: "deceleration", Time: 1740830405120,
		Lat: 52.37398, Lon: 4.88901, Alt: 2.4, Speed: 61, Accuracy: 4.1, Severity: 2,
		Samples: []protocol.Sample{{X: -6.1, Y: 0.3, Z: 9.7, Time: 1740830405, Speed: 16.9}},
		Files:   []protocol.File{{CameraID: 1, FileID: "1740830405-1", FileType: "video"}, {CameraID: 2, FileID: "1740830405-2", FileType: "video"}}})
}

func BenchmarkDecodeStatus(b *testing.B) {
	power := true
	benchPublish(b, protocol.TopicStatus, protocol.Status{Firmware: "3.12.4", ProductType: "AI-12", State: "online",
		SDCard:        &protocol.SDCard{Present: true, Healthy: true, UUID: "8f2c-11aa", Manufacturer: "SanDisk"},
		RecordingTest: "passed", PowerConnected: &power, Cameras: []protocol.Camera{{ID: 1, Connected: true}, {ID: 2, Connected: true}}})
}
