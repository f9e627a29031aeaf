package bolt_test

import (
	"encoding/binary"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// The keys of the device state buckets as an older version wrote them, for
// the tests on newDeviceFixture (fixture_test.go).

// deviceStateKey is a per-device key as the older version wrote it: imei, 0,
// then n as 8 bytes big-endian (unix ms or a sequence number).
func deviceStateKey(imei string, n int64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(imei), 0), uint64(n))
}

// mediaAgeKey is a media_age key as the older version wrote it: imei, 0,
// class, unix ms, record key.
func mediaAgeKey(r store.MediaRef, class byte, at time.Time) []byte {
	k := append([]byte(r.IMEI), 0, class)
	k = binary.BigEndian.AppendUint64(k, uint64(at.UnixMilli()))
	return append(k, r.Key()...)
}
