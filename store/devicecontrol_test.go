package store_test

import (
	"reflect"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestDeviceControlSettings(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newSettingsFixture(t, 2)
		own, inherits := f.imeis[0], f.imeis[1]
		if c := f.effective(own).Control; !reflect.DeepEqual(c, DeviceControl{Mode: ModeNormal}) {
			t.Fatalf("default control %+v", c)
		}
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		orgPins := &PinCodes{Salt: "org-salt", AdminPinHash: "a1", DriverPinHash: "d1", SetAt: at}
		f.update(func(tx *Tx) error {
			return tx.PutOrgSettings(&OrgSettings{OrganizationID: f.org.ID,
				Control: &DeviceControl{AutoCalibration: ptrTo(true), PinCodes: orgPins}}, "test")
		})
		mine := &DeviceControl{Mode: ModeDemo, OTGEnabled: ptrTo(true), TailgatingCoolOffMinutes: 30,
			AutoCalibration: ptrTo(false),
			ADAS: &ADASMeasurements{CameraHeight: 150, CameraOffset: -12, VehicleWidth: 180.5,
				Points: &ADASPoints{LowestUsableRow: 600, CalpickTopLeftCol: 600, CalpickBottomRightRow: 650}},
			CameraNames: map[int]string{50: "Trailer"},
			Calibration: &CalibrationState{Type: CalibrationAuto, State: CalibrationPending, RequestedAt: at, UpdatedAt: at}}
		f.update(func(tx *Tx) error {
			return tx.PutDeviceSettings(&DeviceSettings{IMEI: own, Control: mine}, "test")
		})
		var stored *DeviceSettings
		var org *OrgSettings
		f.update(func(tx *Tx) (err error) {
			if stored, err = tx.DeviceSettings(own); err != nil {
				return err
			}
			org, err = tx.OrgSettings(f.org.ID)
			return err
		})
		if !reflect.DeepEqual(stored.Control, mine) {
			t.Fatalf("stored control\n%+v\nwant\n%+v", stored.Control, mine)
		}
		if org.Control == nil || !reflect.DeepEqual(org.Control.PinCodes, orgPins) {
			t.Fatalf("organization control %+v", org.Control)
		}
		e := f.effective(own).Control
		if e.Mode != ModeDemo || Enabled(e.AutoCalibration) || !Enabled(e.OTGEnabled) || e.ADAS.VehicleWidth != 180.5 ||
			e.ADAS.Points.CalpickBottomRightRow != 650 || e.CameraNames[50] != "Trailer" || e.Calibration.State != CalibrationPending {
			t.Fatalf("own control %+v: the device's own members win", e)
		}
		if e.PinCodes == nil || e.PinCodes.Salt != "org-salt" {
			t.Fatalf("pins %+v: a member the device lacks comes from its organization", e.PinCodes)
		}
		e = f.effective(inherits).Control
		if e.Mode != ModeNormal || !Enabled(e.AutoCalibration) || e.PinCodes.AdminPinHash != "a1" || e.ADAS != nil {
			t.Fatalf("inherited control %+v", e)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
