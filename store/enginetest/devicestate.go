package enginetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// deviceStateTests are the tests of the records of a device's state.
var deviceStateTests = []test{
	{"QueuedCommands", testQueuedCommands},
	{"AuxCameras", testAuxCameras},
	{"DeviceLinks", testDeviceLinks},
	{"DeviceLinksEach", testDeviceLinksEach},
	{"DataUsagePeriods", testDataUsagePeriods},
}

// seedDevices inserts the devices testIMEI(1) to testIMEI(n) in the
// directory's organization, and returns their IMEIs.
func seedDevices(t *testing.T, e store.Engine, n int) []string {
	t.Helper()
	d := seedDirectory(t, e)
	s := seeder{t, e, testTime}
	var imeis []string
	for i := 1; i <= n; i++ {
		s.device(store.Device{IMEI: testIMEI(i), OrganizationID: d.org.ID, PartnerID: d.p.ID, Ownership: 1})
		imeis = append(imeis, testIMEI(i))
	}
	return imeis
}

// testAuxCameras stores a device's cameras in their order, replaces them,
// keeps a list left empty apart from one never stored, and forgets them.
func testAuxCameras(t *testing.T, e store.Engine) {
	imeis := seedDevices(t, e, 2)
	a := imeis[0]
	cams := []store.AuxCamera{
		{CameraID: 52, SerialNumber: "S52", SSID: "AUX-52", Kind: "wifi", Paired: true, Connected: true, PairedAt: testTime,
			ChangedAt: testTime.Add(time.Minute)},
		{CameraID: 50, Kind: "wired"},
	}
	get := func(imei string) ([]store.AuxCamera, error) {
		t.Helper()
		var got []store.AuxCamera
		err := e.View(t.Context(), func(r store.Records) (err error) { got, err = r.AuxCameras().Get(imei); return err })
		return got, err
	}
	_, err := get(a)
	wantErr(t, "cameras never stored", err, store.ErrNotFound)
	write(t, e, func(r store.Records) error { return r.AuxCameras().Put(a, cams) })
	got, err := get(a)
	wantEqual(t, "Get", got, cams)
	wantErr(t, "Get", err, nil)
	replaced := []store.AuxCamera{{CameraID: 50, Paired: true}, {CameraID: 51, SerialNumber: "S51"}}
	write(t, e, func(r store.Records) error { return r.AuxCameras().Put(a, replaced) })
	got, err = get(a)
	wantEqual(t, "Get after a replace", got, replaced)
	wantErr(t, "Get after a replace", err, nil)
	write(t, e, func(r store.Records) error { return r.AuxCameras().Put(a, nil) })
	if got, err := get(a); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Get of a list left empty = %#v, %v; want an empty list", got, err)
	}
	write(t, e, func(r store.Records) error {
		if err := r.AuxCameras().Delete(a); err != nil {
			return err
		}
		return r.AuxCameras().Delete(imeis[1]) // none stored
	})
	_, err = get(a)
	wantErr(t, "cameras after Delete", err, store.ErrNotFound)
}

// testQueuedCommands queues commands of two devices, one id twice: each
// queue lists in the order queued, lookups and deletes by id take the
// oldest with that id, the arguments come back byte for byte, a device not
// in the inventory has no queue and a removed device's goes with it.
func testQueuedCommands(t *testing.T, e store.Engine) {
	imeis := seedDevices(t, e, 3)
	a, b, c := imeis[0], imeis[1], imeis[2]
	at := testTime
	cmds := []store.QueuedCommand{
		{ID: "old", IMEI: a, Name: "reboot", Args: json.RawMessage(`{"delay":5}`), QueuedAt: at},
		{ID: "x", IMEI: b, Name: "format", QueuedAt: at},
		{ID: "new", IMEI: a, Name: "format", QueuedAt: at.Add(time.Second)},
		{ID: "old", IMEI: a, Name: "privacyMode", Args: json.RawMessage(`{"mode": "on"}`), QueuedAt: at.Add(2 * time.Second)},
	}
	write(t, e, func(r store.Records) error {
		for i := range cmds {
			if err := r.QueuedCommands().Add(&cmds[i]); err != nil {
				return err
			}
		}
		return nil
	})
	list := func(imei string) []store.QueuedCommand {
		t.Helper()
		var q []store.QueuedCommand
		read(t, e, func(r store.Records) (err error) { q, err = r.QueuedCommands().List(imei); return err })
		return q
	}
	equal := func(a, b store.QueuedCommand) bool {
		return a.ID == b.ID && a.IMEI == b.IMEI && a.Name == b.Name && JSONEqual(t, a.Args, b.Args) && a.QueuedAt.Equal(b.QueuedAt)
	}
	if got, want := list(a), []store.QueuedCommand{cmds[0], cmds[2], cmds[3]}; !slices.EqualFunc(got, want, equal) {
		t.Fatalf("queue of a = %+v\nwant %+v", got, want)
	}
	if got := list(b); len(got) != 1 || !equal(got[0], cmds[1]) || got[0].Args != nil {
		t.Fatalf("queue of b = %+v", got)
	}
	if got := list(c); len(got) != 0 {
		t.Fatalf("queue of a device without commands = %+v", got)
	}
	read(t, e, func(r store.Records) error {
		if got, err := r.QueuedCommands().Get(a, "old"); err != nil || !equal(*got, cmds[0]) {
			t.Errorf("Get(old) = %+v, %v; want the oldest", got, err)
		}
		_, err := r.QueuedCommands().Get(a, "x")
		wantErr(t, "Get of another device's command", err, store.ErrNotFound)
		return nil
	})
	write(t, e, func(r store.Records) error {
		if ok, err := r.QueuedCommands().Delete(a, "old"); !ok || err != nil {
			t.Errorf("Delete(old) = %v, %v; want true", ok, err)
		}
		if ok, err := r.QueuedCommands().Delete(a, "none"); ok || err != nil {
			t.Errorf("Delete(none) = %v, %v; want false", ok, err)
		}
		return nil
	})
	if got, want := list(a), []store.QueuedCommand{cmds[2], cmds[3]}; !slices.EqualFunc(got, want, equal) {
		t.Fatalf("queue after deleting the oldest old = %+v\nwant %+v", got, want)
	}
	read(t, e, func(r store.Records) error {
		if got, err := r.QueuedCommands().Get(a, "old"); err != nil || !equal(*got, cmds[3]) {
			t.Errorf("Get(old) after the delete = %+v, %v; want the later one", got, err)
		}
		return nil
	})
}

// testDeviceLinks stores link states whole (health as a document, the
// reported configuration as sent), of inventory devices and of any IMEI
// the broker saw, replaces and deletes them.
func testDeviceLinks(t *testing.T, e store.Engine) {
	a := seedDevices(t, e, 1)[0]
	at := testTime
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
		err := e.View(t.Context(), func(r store.Records) (err error) { got, err = r.DeviceLinks().Get(imei); return err })
		return got, err
	}
	_, err := get(a)
	wantErr(t, "link never stored", err, store.ErrNotFound)
	write(t, e, func(r store.Records) error {
		if err := r.DeviceLinks().Put(full); err != nil {
			return err
		}
		return r.DeviceLinks().Put(stranger)
	})
	for _, want := range []*store.DeviceLink{full, stranger} {
		got, err := get(want.IMEI)
		wantErr(t, "Get "+want.IMEI, err, nil)
		wantEqual(t, "Get "+want.IMEI, got, want)
	}
	offline := *full
	offline.Presence, offline.ConnectionID, offline.Health, offline.ReportedConfig = store.PresenceOffline, "", nil, nil
	write(t, e, func(r store.Records) error { return r.DeviceLinks().Put(&offline) })
	got, err := get(a)
	wantErr(t, "Get after a replace", err, nil)
	wantEqual(t, "Get after a replace", got, &offline)
	write(t, e, func(r store.Records) error {
		if err := r.DeviceLinks().Delete("dev-01"); err != nil {
			return err
		}
		return r.DeviceLinks().Delete("dev-02") // none stored
	})
	_, err = get("dev-01")
	wantErr(t, "link after Delete", err, store.ErrNotFound)
}

// testDeviceLinksEach visits more links than an engine reads at once
// (PostgreSQL: 500) in IMEI (byte) order, lets the visit read other
// records, and stops at the visit's first error.
func testDeviceLinksEach(t *testing.T, e store.Engine) {
	const n = 1107
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("dev-%04d", i))
	}
	want = append(want, "Dev-x") // before every dev- in byte order
	write(t, e, func(r store.Records) error {
		for i := len(want) - 1; i >= 0; i-- {
			if err := r.DeviceLinks().Put(&store.DeviceLink{IMEI: want[i], Presence: store.PresenceOnline}); err != nil {
				return err
			}
		}
		return nil
	})
	want = append([]string{"Dev-x"}, want[:n]...)
	var got []string
	read(t, e, func(r store.Records) error {
		return r.DeviceLinks().Each(func(l *store.DeviceLink) error {
			got = append(got, l.IMEI)
			if _, err := r.DeviceCredentials().Get(l.IMEI); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("credential read during Each: %v", err)
			}
			return nil
		})
	})
	if !slices.Equal(got, want) {
		t.Fatalf("Each visited %d links, first %q; want %d in byte order", len(got), got[:min(3, len(got))], len(want))
	}
	stop := errors.New("stop")
	visits := 0
	err := e.View(t.Context(), func(r store.Records) error {
		return r.DeviceLinks().Each(func(*store.DeviceLink) error {
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

// testDataUsagePeriods stores periods of two devices, replaces one (its
// start the same to the millisecond), lists each device's latest first and
// deletes one device's.
func testDataUsagePeriods(t *testing.T, e store.Engine) {
	imeis := seedDevices(t, e, 2)
	a, b := imeis[0], imeis[1]
	month := func(m time.Month) time.Time { return time.Date(2026, m, 1, 0, 0, 0, 0, time.UTC) }
	write(t, e, func(r store.Records) error {
		for _, p := range []store.DataUsagePeriod{
			{IMEI: a, PeriodStart: month(2), BytesUp: 10, BytesDown: 20, ReceivedAt: month(3).Add(-time.Hour)},
			{IMEI: a, PeriodStart: month(3), BytesUp: 1, BytesDown: 2, ReceivedAt: month(3)},
			{IMEI: a, PeriodStart: month(1), BytesUp: 5, BytesDown: 6, ReceivedAt: month(2)},
			{IMEI: b, PeriodStart: month(3), BytesUp: 7, BytesDown: 8, ReceivedAt: month(3)},
			// The same period as a's March, to the millisecond: its running total.
			{IMEI: a, PeriodStart: month(3).Add(400 * time.Microsecond), BytesUp: 3, BytesDown: 4, ReceivedAt: month(3).Add(time.Hour)},
		} {
			if err := r.DataUsagePeriods().Put(&p); err != nil {
				return err
			}
		}
		return nil
	})
	latest := func(imei string, n int) []string {
		t.Helper()
		var out []string
		read(t, e, func(r store.Records) error {
			ps, err := r.DataUsagePeriods().Latest(imei, n)
			for _, p := range ps {
				out = append(out, fmt.Sprintf("%s %s %d/%d %s", p.IMEI, p.PeriodStart.Format(time.DateOnly), p.BytesUp, p.BytesDown,
					p.ReceivedAt.Format(time.RFC3339)))
			}
			return err
		})
		return out
	}
	want := []string{
		a + " 2026-03-01 3/4 2026-03-01T01:00:00Z",
		a + " 2026-02-01 10/20 2026-02-28T23:00:00Z",
		a + " 2026-01-01 5/6 2026-02-01T00:00:00Z",
	}
	wantEqual(t, "Latest(a, 0)", latest(a, 0), want)
	wantEqual(t, "Latest(a, 2)", latest(a, 2), want[:2])
	write(t, e, func(r store.Records) error { return r.DataUsagePeriods().DeleteDevice(a) })
	if got := latest(a, 0); len(got) != 0 {
		t.Fatalf("periods after DeleteDevice %q", got)
	}
	wantEqual(t, "the other device's periods after DeleteDevice", latest(b, 0), []string{b + " 2026-03-01 7/8 2026-03-01T00:00:00Z"})
}
