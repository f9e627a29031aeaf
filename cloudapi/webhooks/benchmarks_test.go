package webhooks

import (
	"bytes"
	"net/http"
	"testing"
	"time"
)

// Benchmarks of delivery signing (every attempt) and of the receiver's
// check. They run only with -bench:
//
//	go test -run '^$' -bench . -benchtime 200ms ./cloudapi/webhooks

var benchBody = bytes.Repeat([]byte(`{"type":"event","data":{"serialNumber":"490154203237518"}}`), 16) // about 1 KiB

func BenchmarkSign(b *testing.B) {
	secret := Secret([]byte("benchmark server key, 32 bytes!!"), 1, NewSalt())
	ts := time.Unix(1740830400, 0)
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(secret, "msg_2YbC0Zf7", ts, benchBody); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	secret := Secret([]byte("benchmark server key, 32 bytes!!"), 1, NewSalt())
	ts := time.Unix(1740830400, 0)
	sig, err := Sign(secret, "msg_2YbC0Zf7", ts, benchBody)
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, "msg_2YbC0Zf7")
	h.Set(HeaderTimestamp, "1740830400")
	h.Set(HeaderSignature, sig)
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(secret, h, benchBody, ts, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}
