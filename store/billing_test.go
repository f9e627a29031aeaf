package store_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestAuxCameraStatusMessages(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		apply := func(cams ...CameraHealth) {
			t.Helper()
			f.update(func(tx *Tx) error { return tx.ApplyAuxCameraStatus(dev, cams) })
		}
		f.update(func(tx *Tx) error {
			return tx.RecordAuxPairing(dev, []AuxCamera{{CameraID: 50, SSID: "AUX-CAM-1", SerialNumber: "SN50", Kind: "wifi"}})
		})
		apply(CameraHealth{ID: 1, Connected: true}, CameraHealth{ID: 50, Connected: true, Kind: "wifi", SerialNumber: "SN50"})
		apply(CameraHealth{ID: 1, Connected: true}, CameraHealth{ID: 50, Connected: true, Kind: "wifi", SerialNumber: "SN50"})
		apply()                                     // a report without cameras changes nothing
		apply(CameraHealth{ID: 1, Connected: true}) // camera 50 missing: disconnected

		var statuses []string
		for _, m := range f.messages(MessageSystem) {
			if m.SubType != SystemAuxCameraStatus && m.SubType != SystemAuxCameraPairing {
				continue
			}
			n := m.AuxCamera
			if n == nil || n.Camera.CameraID != 50 || m.IMEI != dev.IMEI || m.Time.IsZero() {
				t.Fatalf("message %+v", m)
			}
			statuses = append(statuses, n.Status)
		}
		want := []string{"paired", "connected", "disconnected"}
		if len(statuses) != len(want) {
			t.Fatalf("statuses %v, want %v", statuses, want)
		}
		for i := range want {
			if statuses[i] != want[i] {
				t.Fatalf("statuses %v, want %v", statuses, want)
			}
		}
		if got := len(f.messages(MessageActivation)); got != 2 {
			t.Fatalf("%d activation messages, want 2 (connected, disconnected)", got)
		}
		f.update(func(tx *Tx) error { return tx.RecordAuxUnpairing(dev, []int{50}) })
		f.view(func(tx *Tx) error {
			cams, err := tx.AuxCameras(dev.IMEI)
			if err != nil || len(cams) != 0 {
				t.Errorf("after unpairing %+v %v", cams, err)
			}
			return nil
		})
		if err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.RecordAuxPairing(dev, []AuxCamera{{CameraID: 2}}) }); !errors.Is(err, ErrInvalid) {
			t.Fatalf("pairing camera 2 as auxiliary: %v", err)
		}
	})
}

func TestBilling(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		refurb := f.addDevice(2, f.org, f.partner.ID)
		f.update(func(tx *Tx) error { return tx.SetRefurbished(refurb.IMEI, true) })

		err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.SetAuxBilling(dev.IMEI, AuxBillingEnable) })
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("enabling without an auxiliary camera: %v", err)
		}
		f.update(func(tx *Tx) error {
			if err := tx.RecordAuxPairing(dev, []AuxCamera{{CameraID: 50}}); err != nil {
				return err
			}
			if err := tx.SetAuxBilling(dev.IMEI, AuxBillingEnable); err != nil {
				return err
			}
			b, err := tx.DeviceBilling(dev.IMEI)
			if err != nil || b.AuxBillingStatus != AuxBillingEnable || !b.AuxBillingUpdatedAt.Equal(f.clock.Now()) {
				t.Errorf("billing %+v %v", b, err)
			}
			return tx.SetBillingStatus(dev.IMEI, DeviceSuspended)
		})
		for name, fn := range map[string]func(tx *Tx) error{
			"aux billing": func(tx *Tx) error { return tx.SetAuxBilling(refurb.IMEI, AuxBillingDisable) },
			"status":      func(tx *Tx) error { return tx.SetBillingStatus(refurb.IMEI, DeviceSuspended) },
		} {
			if err := f.db.Update(t.Context(), Actor{}, fn); !errors.Is(err, ErrConflict) {
				t.Errorf("refurbished device %s change: %v, want conflict", name, err)
			}
		}

		// An unknown status is refused before the device is looked up; a refused
		// change leaves no audit entry.
		for name, fn := range map[string]func(tx *Tx) error{
			"aux billing": func(tx *Tx) error { return tx.SetAuxBilling("000000000000000", "maybe") },
			"status":      func(tx *Tx) error { return tx.SetBillingStatus("000000000000000", "maybe") },
		} {
			if err := f.db.Update(t.Context(), Actor{}, fn); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s with an unknown status: %v, want invalid", name, err)
			}
		}
		for _, action := range []string{"device.auxiliaryBilling", "device.billingStatus"} {
			entries, _, err := f.db.AuditLog(t.Context(), AuditFilter{Action: action, EntityID: refurb.IMEI}, Page{})
			if err != nil || len(entries) != 0 {
				t.Errorf("%s audited for the refurbished device: %v %v", action, entries, err)
			}
		}

		// Subscription: the audit entry names reason, user and both ids.
		f.update(func(tx *Tx) error {
			d, _ := tx.Device(dev.IMEI)
			d.DataProfileID = 3 // as if added under an organization default of 3
			return tx.UpdateDevice(d, "device.update")
		})
		err = f.db.Update(t.Context(), Actor{UserID: 9, Email: "p@example.com", Source: "api"}, func(tx *Tx) error {
			return tx.SetSubscription(dev.IMEI, 12, "PUT /v2/devices/{imei}/data-profile/{dataProfileId}")
		})
		if err != nil {
			t.Fatal(err)
		}
		entries, _, err := f.db.AuditLog(t.Context(), AuditFilter{Action: "device.subscription.update"}, Page{})
		if err != nil || len(entries) != 1 {
			t.Fatalf("audit %v %v", entries, err)
		}
		e := entries[0]
		if e.UserID != 9 || e.Reason == "" || !e.Time.Equal(f.clock.Now()) ||
			string(e.Before) != `{"subscriptionId":3,"automaticFirmwareUpdates":true}` ||
			string(e.After) != `{"subscriptionId":12,"automaticFirmwareUpdates":false}` {
			t.Fatalf("audit entry %+v before %s after %s", e, e.Before, e.After)
		}
		f.view(func(tx *Tx) error {
			if d, _ := tx.Device(dev.IMEI); d.DataProfileID != 12 {
				t.Errorf("device data profile %d, want 12", d.DataProfileID)
			}
			return nil
		})

		// The organization default reaches every device at once only with the organization profile enabled.
		f.update(func(tx *Tx) error { return tx.SetDefaultDataProfile(f.org.ID, 5, "test") })
		f.view(func(tx *Tx) error {
			if d, _ := tx.Device(dev.IMEI); d.DataProfileID != 12 {
				t.Errorf("device data profile %d after a default without the profile, want 12", d.DataProfileID)
			}
			return nil
		})
		f.update(func(tx *Tx) error {
			o, _ := tx.Organization(f.org.ID)
			o.IsOrganizationProfileEnabled = true
			if err := tx.UpdateOrganization(o); err != nil {
				return err
			}
			return tx.SetDefaultDataProfile(f.org.ID, 6, "organization default")
		})
		f.view(func(tx *Tx) error {
			if d, _ := tx.Device(refurb.IMEI); d.DataProfileID != 6 {
				t.Errorf("device data profile %d with the organization profile, want 6", d.DataProfileID)
			}
			return nil
		})
	})
}

func TestDataUsage(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		feb, mar := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		for _, u := range []DataUsage{{PeriodStart: feb, BytesUp: 10, BytesDown: 20}, {PeriodStart: feb, BytesUp: 15, BytesDown: 30},
			{PeriodStart: mar, BytesUp: 1, BytesDown: 2}} {
			f.update(func(tx *Tx) error { return tx.RecordDataUsage(dev.IMEI, u) })
		}
		if err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error {
			return tx.RecordDataUsage(dev.IMEI, DataUsage{PeriodStart: mar, BytesUp: -1})
		}); !errors.Is(err, ErrInvalid) {
			t.Fatalf("negative usage: %v", err)
		}
		f.view(func(tx *Tx) error {
			ps, err := tx.DataUsage(dev.IMEI, 0)
			if err != nil || len(ps) != 2 || !ps[0].PeriodStart.Equal(mar) || ps[1].BytesUp != 15 || ps[1].BytesDown != 30 {
				t.Errorf("periods %+v %v", ps, err)
			}
			return nil
		})
	})
}
