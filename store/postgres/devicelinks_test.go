package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestDeviceLinks stores link states whole (health as a document, the
// reported configuration byte for byte), of inventory devices and of any
// IMEI the broker saw, replaces and deletes them.
func TestDeviceLinks(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a := f.imeis[0]
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	on := true
	full := &store.DeviceLink{IMEI: a, Presence: store.PresenceOnline, ConnectionID: "c1", ConnectedAt: at,
		DisconnectedAt: at.Add(-time.Hour), LastSeen: at.Add(time.Minute), ProtocolVersion: 5, RemoteAddr: "10.0.0.1:4000",
		Firmware: "3.12.4", ProductType: "dc200", Legacy: true,
		Health: &store.DeviceHealth{SDCard: &store.SDCardHealth{Present: true, Healthy: true, UUID: "u"}, RecordingTest: "passed",
			PowerConnected: &on, Cameras: []store.CameraHealth{{ID: 1, Connected: true}, {ID: 51, Kind: "wired", SerialNumber: "S"}},
			DataUsage: &store.DataUsage{PeriodStart: at.AddDate(0, 0, -10), BytesUp: 1, BytesDown: 2}, ReportedAt: at},
		AckedConfigVersion: 7, ConfigAckedAt: at, ReportedConfig: json.RawMessage(`{"brightness":128,"firmware":"3.12.4"}`)}
	stranger := &store.DeviceLink{IMEI: "dev-01", Presence: store.PresenceOffline}
	get := func(imei string) (*store.DeviceLink, error) {
		t.Helper()
		var got *store.DeviceLink
		err := f.e.view(context.Background(), func(tx *tx) (err error) { got, err = tx.DeviceLinks().Get(imei); return err })
		return got, err
	}
	if got, err := get(a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("link never stored: %+v, %v; want not found", got, err)
	}
	f.update(func(tx *tx) error {
		if err := tx.DeviceLinks().Put(full); err != nil {
			return err
		}
		return tx.DeviceLinks().Put(stranger)
	})
	for _, want := range []*store.DeviceLink{full, stranger} {
		if got, err := get(want.IMEI); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Get = %+v, %v\nwant %+v", got, err, want)
		}
	}
	offline := *full
	offline.Presence, offline.ConnectionID, offline.Health, offline.ReportedConfig = store.PresenceOffline, "", nil, nil
	f.update(func(tx *tx) error { return tx.DeviceLinks().Put(&offline) })
	if got, err := get(a); err != nil || !reflect.DeepEqual(got, &offline) {
		t.Fatalf("Get after a replace = %+v, %v\nwant %+v", got, err, &offline)
	}
	f.update(func(tx *tx) error {
		if err := tx.DeviceLinks().Delete("dev-01"); err != nil {
			return err
		}
		return tx.DeviceLinks().Delete("dev-02")
	})
	if got, err := get("dev-01"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("link after Delete: %+v, %v", got, err)
	}
	// The store drops a removed device's link itself.
	f.removeDevice(a)
	if _, err := get(a); err != nil {
		t.Fatalf("the link of a device removed by a transaction that did not drop it: %v", err)
	}
}

// TestDeviceLinksEach visits more links than one read returns in IMEI
// (byte) order, lets the visit read other records, and stops at the
// visit's first error.
func TestDeviceLinksEach(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	const n = 2*linksPerQuery + 7
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("dev-%04d", i))
	}
	want = append(want, "Dev-x") // before every dev- in byte order
	f.update(func(tx *tx) error {
		for i := len(want) - 1; i >= 0; i-- {
			if err := tx.DeviceLinks().Put(&store.DeviceLink{IMEI: want[i], Presence: store.PresenceOnline}); err != nil {
				return err
			}
		}
		return nil
	})
	want = append([]string{"Dev-x"}, want[:n]...)
	var got []string
	f.view(func(tx *tx) error {
		return tx.DeviceLinks().Each(func(l *store.DeviceLink) error {
			got = append(got, l.IMEI)
			if _, err := tx.DeviceCredentials().Get(l.IMEI); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("credential read during Each: %v", err)
			}
			return nil
		})
	})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Each visited %d links, first %q; want %d in byte order", len(got), got[:min(3, len(got))], len(want))
	}
	stop := errors.New("stop")
	visits := 0
	err := f.e.view(context.Background(), func(tx *tx) error {
		return tx.DeviceLinks().Each(func(*store.DeviceLink) error {
			if visits++; visits == 3 {
				return stop
			}
			return nil
		})
	})
	if !errors.Is(err, stop) || visits != 3 {
		t.Fatalf("Each after the visit failed: %v after %d visits; want stop after 3", err, visits)
	}
}

// TestDeviceCredentials stores, revokes and deletes credentials; the
// schema refuses a hash that is not a SHA-256, a device not in the
// inventory has none, and a removed device's goes with it.
func TestDeviceCredentials(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	a, b := f.imeis[0], f.imeis[1]
	at := time.Date(2026, 3, 11, 10, 0, 0, 0, time.UTC)
	get := func(imei string) (*store.DeviceCredential, error) {
		t.Helper()
		var got *store.DeviceCredential
		err := f.e.view(context.Background(), func(tx *tx) (err error) { got, err = tx.DeviceCredentials().Get(imei); return err })
		return got, err
	}
	if got, err := get(a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("credential never stored: %+v, %v; want not found", got, err)
	}
	hash := make([]byte, 32)
	hash[0], hash[31] = 1, 0xff
	issued := &store.DeviceCredential{IMEI: a, TokenHash: hash, IssuedAt: at, Generation: 2, LastBootstrap: at.Unix()}
	revoked := &store.DeviceCredential{IMEI: a, IssuedAt: at, Generation: 2, RevokedAt: at.Add(time.Hour), LastBootstrap: at.Unix()}
	for _, want := range []*store.DeviceCredential{issued, revoked} {
		f.update(func(tx *tx) error { return tx.DeviceCredentials().Put(want) })
		if got, err := get(a); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Get = %+v, %v\nwant %+v", got, err, want)
		}
	}
	err := f.e.update(context.Background(), func(tx *tx) error {
		return tx.DeviceCredentials().Put(&store.DeviceCredential{IMEI: a, TokenHash: []byte("short")})
	})
	if err == nil {
		t.Fatal("a token hash of 5 bytes was stored")
	}
	err = f.e.update(context.Background(), func(tx *tx) error {
		return tx.DeviceCredentials().Put(&store.DeviceCredential{IMEI: "000000000000000", TokenHash: hash})
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("credential of an unknown device: %v; want not found", err)
	}
	f.update(func(tx *tx) error {
		if err := tx.DeviceCredentials().Delete(a); err != nil {
			return err
		}
		if err := tx.DeviceCredentials().Delete(f.imeis[2]); err != nil {
			return err
		}
		return tx.DeviceCredentials().Put(&store.DeviceCredential{IMEI: b, TokenHash: hash, Generation: 1})
	})
	if got, err := get(a); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("credential after Delete: %+v, %v", got, err)
	}
	f.removeDevice(b)
	if got, err := get(b); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("credential of the removed device: %+v, %v", got, err)
	}
}
