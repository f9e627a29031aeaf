package enginetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// deviceStateTests are the tests of the records of a device's state.
var deviceStateTests = []test{
	{"QueuedCommands", testQueuedCommands},
	{"AuxCameras", testAuxCameras},
	{"DeviceBillings", testDeviceBillings},
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

// testDeviceBillings stores, replaces and deletes billing records.
func testDeviceBillings(t *testing.T, e store.Engine) {
	imeis := seedDevices(t, e, 2)
	a := imeis[0]
	get := func(imei string) (*store.DeviceBilling, error) {
		t.Helper()
		var got *store.DeviceBilling
		err := e.View(t.Context(), func(r store.Records) (err error) { got, err = r.DeviceBillings().Get(imei); return err })
		return got, err
	}
	_, err := get(a)
	wantErr(t, "billing never stored", err, store.ErrNotFound)
	first := &store.DeviceBilling{IMEI: a, AuxBillingStatus: store.AuxBillingDisable, SubscriptionUpdatedAt: testTime}
	second := &store.DeviceBilling{IMEI: a, AuxBillingStatus: store.AuxBillingEnable, AuxBillingUpdatedAt: testTime.Add(time.Hour),
		Refurbished: true}
	for _, want := range []*store.DeviceBilling{first, second} {
		write(t, e, func(r store.Records) error { return r.DeviceBillings().Put(want) })
		got, err := get(a)
		wantEqual(t, "Get", got, want)
		wantErr(t, "Get", err, nil)
	}
	write(t, e, func(r store.Records) error {
		if err := r.DeviceBillings().Delete(a); err != nil {
			return err
		}
		return r.DeviceBillings().Delete(imeis[1]) // none stored
	})
	_, err = get(a)
	wantErr(t, "billing after Delete", err, store.ErrNotFound)
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
		return a.ID == b.ID && a.IMEI == b.IMEI && a.Name == b.Name && jsonEqual(t, a.Args, b.Args) && a.QueuedAt.Equal(b.QueuedAt)
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
