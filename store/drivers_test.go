package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func (f *fleetFixture) addDriver(org *Organization, thirdParty string) *Driver {
	f.t.Helper()
	d := &Driver{OrganizationID: org.ID, ThirdPartyID: thirdParty, FirstName: "Ann", LastName: "Driver"}
	f.update(func(tx *Tx) error { return tx.CreateDriver(d) })
	return d
}

func TestCreateDriver(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		d := f.addDriver(f.org, "moshe123")
		if !ValidDriverCode(d.Code) || !d.IsActive || !strings.HasPrefix(d.QRPayload, DriverQRPayloadHead) {
			t.Fatalf("driver %+v: want a 5-digit code, active, a QR payload", d)
		}
		f.view(func(tx *Tx) error {
			s, err := tx.DeviceSettings(dev.IMEI)
			if err != nil || s.Version != 1 {
				t.Errorf("device config version %d (%v), want 1 after a driver was added", s.Version, err)
			}
			e, err := tx.EffectiveSettings(dev.IMEI)
			if err != nil {
				return err
			}
			if len(e.Drivers) != 1 || e.Drivers[0].PinCode != d.Code || e.Drivers[0].QRCode != d.QRPayload {
				t.Errorf("effective drivers %+v, want the new driver's credential", e.Drivers)
			}
			got, err := tx.DriverByQR(d.QRPayload)
			if err != nil || got.ID != d.ID {
				t.Errorf("DriverByQR: %v %v", got, err)
			}
			return nil
		})
		entries, _, err := f.db.AuditLog(t.Context(), AuditFilter{Action: "driver.create"}, Page{})
		if err != nil || len(entries) != 1 || strings.Contains(string(entries[0].After), d.QRPayload) {
			t.Fatalf("audit %+v %v: want one entry without the QR payload", entries, err)
		}

		tests := []struct {
			name string
			d    Driver
			want error
			msg  string
		}{
			{"duplicate third-party id", Driver{ThirdPartyID: "moshe123"}, ErrConflict, "driverThirdPartyId"},
			{"duplicate code", Driver{ThirdPartyID: "other", Code: d.Code}, ErrConflict, "driverCode"},
			{"code not 5 digits", Driver{ThirdPartyID: "x1", Code: "12a45"}, ErrInvalid, "5 digits"},
			{"missing third-party id", Driver{}, ErrInvalid, "driverThirdPartyId is required"},
			{"short first name", Driver{ThirdPartyID: "x2", FirstName: "A"}, ErrInvalid, "firstName"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				nd := tt.d
				nd.OrganizationID = f.org.ID
				err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.CreateDriver(&nd) })
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("err %v, want %v mentioning %q", err, tt.want, tt.msg)
				}
			})
		}
	})
}

func TestUpdateAndDeleteDriver(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		a := f.addDriver(f.org, "a")
		b := f.addDriver(f.org, "b")
		code := "54321"
		if code == a.Code {
			code = "54322"
		}
		f.update(func(tx *Tx) error {
			d, err := tx.UpdateDriver(a.ID, DriverPatch{Code: &code})
			if err != nil {
				return err
			}
			if d.Code != code || d.FirstName != "Ann" {
				t.Errorf("after patch %+v: code changed and first name kept", d)
			}
			if _, err := tx.DriverByCode(f.org.ID, a.Code); !errors.Is(err, ErrNotFound) && a.Code != code {
				t.Errorf("old code still resolves: %v", err)
			}
			return nil
		})
		err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error {
			_, err := tx.UpdateDriver(b.ID, DriverPatch{Code: &code})
			return err
		})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("taking another driver's code: %v, want conflict", err)
		}
		err = f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.DeleteDriver(a.ID) })
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "deactivate") {
			t.Fatalf("deleting an active driver: %v", err)
		}
		inactive := false
		f.update(func(tx *Tx) error {
			if _, err := tx.UpdateDriver(a.ID, DriverPatch{IsActive: &inactive}); err != nil {
				return err
			}
			return tx.DeleteDriver(a.ID)
		})
		f.view(func(tx *Tx) error {
			if _, err := tx.DriverByCode(f.org.ID, code); !errors.Is(err, ErrNotFound) {
				t.Errorf("deleted driver's code still resolves: %v", err)
			}
			return nil
		})
		// The freed third-party id can be used again.
		f.addDriver(f.org, "a")
	})
}

func TestDriverAssignments(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev1 := f.addDevice(1, f.org, f.partner.ID)
		dev2 := f.addDevice(2, f.org, f.partner.ID)
		a := f.addDriver(f.org, "a")
		b := f.addDriver(f.org, "b")
		other := f.addDriver(f.org, "c")
		now := f.clock.Now()
		f.update(func(tx *Tx) error {
			return tx.AssignDriver(&DriverAssignment{OrganizationID: f.org.ID, DriverID: a.ID, IMEI: dev1.IMEI})
		})
		tests := []struct {
			name string
			a    DriverAssignment
			want error
		}{
			{"device already has a driver", DriverAssignment{DriverID: b.ID, IMEI: dev1.IMEI}, ErrConflict},
			{"driver already on a device", DriverAssignment{DriverID: a.ID, IMEI: dev2.IMEI}, ErrConflict},
			{"end before start", DriverAssignment{DriverID: b.ID, IMEI: dev2.IMEI, Start: now, End: now.Add(-time.Hour)}, ErrInvalid},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				as := tt.a
				as.OrganizationID = f.org.ID
				if err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.AssignDriver(&as) }); !errors.Is(err, tt.want) {
					t.Fatalf("err %v, want %v", err, tt.want)
				}
			})
		}
		f.view(func(tx *Tx) error {
			creds, err := tx.DriverCredentials(dev1.IMEI)
			if err != nil || len(creds) != 1 || creds[0].DriverID != a.ID {
				t.Errorf("assigned device credentials %+v %v, want only driver a", creds, err)
			}
			creds, err = tx.DriverCredentials(dev2.IMEI)
			if err != nil || len(creds) != 3 {
				t.Errorf("unassigned device credentials %+v %v, want every active driver", creds, err)
			}
			return nil
		})
		_ = other
		f.clock.Advance(time.Hour)
		f.update(func(tx *Tx) error { return tx.UnassignDriver(f.org.ID, a.ID, dev1.IMEI) })
		f.view(func(tx *Tx) error {
			if d, err := tx.CurrentDriver(dev1, now.Add(30*time.Minute)); err != nil || d == nil || d.ID != a.ID {
				t.Errorf("driver during the past assignment: %v %v", d, err)
			}
			if d, err := tx.CurrentDriver(dev1, f.clock.Now().Add(time.Minute)); err != nil || d != nil {
				t.Errorf("driver after unassigning: %v %v", d, err)
			}
			return nil
		})
		if err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.UnassignDriver(f.org.ID, a.ID, dev1.IMEI) }); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unassigning twice: %v", err)
		}
	})
}

func TestDriverStateMachine(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		a := f.addDriver(f.org, "a")
		b := f.addDriver(f.org, "b")
		otherOrg := &Organization{}
		f.update(func(tx *Tx) error {
			var err error
			otherOrg, err = tx.CreateOrganization(f.partner.ID, "Other", nil)
			return err
		})
		stranger := f.addDriver(otherOrg, "s")
		t0 := f.clock.Now()
		ms := func(d time.Duration) time.Time { return t0.Add(d) }
		apply := func(ev EventInput) []DriverTransition {
			t.Helper()
			var out []DriverTransition
			f.update(func(tx *Tx) error {
				var err error
				out, err = tx.ApplyDriverEvent(dev, ev)
				return err
			})
			return out
		}
		types := func(ts []DriverTransition) string {
			var s []string
			for _, x := range ts {
				s = append(s, x.Type)
			}
			return strings.Join(s, ",")
		}
		wrong := "00000"
		for _, c := range []string{a.Code, b.Code, stranger.Code} {
			if c == wrong {
				wrong = "99999"
			}
		}

		steps := []struct {
			name   string
			ev     EventInput
			want   string
			driver int64
		}{
			{"check in by PIN", EventInput{DeviceEventID: "e1", Type: "driverCheckIn", Time: ms(0), PinCode: a.Code}, "driverCheckIn", a.ID},
			{"redelivery is a no-op", EventInput{DeviceEventID: "e1", Type: "driverCheckIn", Time: ms(0), PinCode: a.Code}, "", a.ID},
			{"new check-in by QR checks out the previous driver", EventInput{DeviceEventID: "e2", Type: "driverCheckIn", Time: ms(10 * time.Minute), QRCode: b.QRPayload}, "driverCheckOut,driverCheckIn", b.ID},
			{"another organization's PIN is a wrong PIN", EventInput{DeviceEventID: "e3", Type: "driverCheckIn", Time: ms(11 * time.Minute), PinCode: stranger.Code}, "", b.ID},
			{"second wrong PIN", EventInput{DeviceEventID: "e4", Type: "driverCheckIn", Time: ms(12 * time.Minute), PinCode: wrong}, "", b.ID},
			{"third wrong PIN within three minutes", EventInput{DeviceEventID: "e5", Type: "driverCheckIn", Time: ms(13 * time.Minute), PinCode: wrong}, "wrongPinCode", b.ID},
			{"wrong PIN after the count restarted", EventInput{DeviceEventID: "e6", Type: "driverCheckIn", Time: ms(14 * time.Minute), PinCode: wrong}, "", b.ID},
			{"two more, but the first is outside the window", EventInput{DeviceEventID: "e7", Type: "driverCheckIn", Time: ms(18 * time.Minute), PinCode: wrong}, "", b.ID},
			{"still only two in the window", EventInput{DeviceEventID: "e8", Type: "driverCheckIn", Time: ms(19 * time.Minute), PinCode: wrong}, "", b.ID},
			{"unknown QR is ignored", EventInput{DeviceEventID: "e9", Type: "driverCheckIn", Time: ms(20 * time.Minute), QRCode: "nonsense"}, "", b.ID},
			{"no check-in passes through", EventInput{DeviceEventID: "e10", Type: "noCheckIn", Time: ms(21 * time.Minute)}, "noCheckIn", b.ID},
			{"check out at the device", EventInput{DeviceEventID: "e11", Type: "driverCheckOut", Time: ms(30 * time.Minute)}, "driverCheckOut", 0},
			{"check out with nobody checked in", EventInput{DeviceEventID: "e12", Type: "driverCheckOut", Time: ms(31 * time.Minute)}, "", 0},
			{"other events are not driver events", EventInput{DeviceEventID: "e13", Type: "accOn", Time: ms(32 * time.Minute)}, "", 0},
		}
		for _, s := range steps {
			got := apply(s.ev)
			if types(got) != s.want {
				t.Fatalf("%s: transitions %q, want %q", s.name, types(got), s.want)
			}
			f.view(func(tx *Tx) error {
				sess, err := tx.CheckedInDriver(dev.IMEI)
				var id int64
				if sess != nil {
					id = sess.DriverID
				}
				if err != nil || id != s.driver {
					t.Fatalf("%s: checked in %d (%v), want %d", s.name, id, err, s.driver)
				}
				return nil
			})
		}
		f.view(func(tx *Tx) error {
			for _, c := range []struct {
				at   time.Duration
				want int64
			}{{-time.Minute, 0}, {0, a.ID}, {5 * time.Minute, a.ID}, {10 * time.Minute, b.ID}, {29 * time.Minute, b.ID}, {30 * time.Minute, 0}} {
				d, err := tx.CurrentDriver(dev, t0.Add(c.at))
				var id int64
				if d != nil {
					id = d.ID
				}
				if err != nil || id != c.want {
					t.Errorf("CurrentDriver at %v: %d %v, want %d", c.at, id, err, c.want)
				}
			}
			segs, err := tx.DriverSegments(dev, t0.Add(5*time.Minute), t0.Add(20*time.Minute))
			if err != nil || len(segs) != 2 || segs[0].DriverID != a.ID || !segs[0].Start.Equal(t0.Add(5*time.Minute)) ||
				segs[1].DriverID != b.ID || !segs[1].End.Equal(t0.Add(20*time.Minute)) {
				t.Errorf("segments %+v %v", segs, err)
			}
			return nil
		})

		// Check-out through the API.
		apply(EventInput{DeviceEventID: "e14", Type: "driverCheckIn", Time: ms(40 * time.Minute), PinCode: a.Code})
		f.update(func(tx *Tx) error {
			tr, err := tx.CheckOutDriver(dev.IMEI)
			if err != nil || tr.Type != "driverCheckOut" || tr.DriverID != a.ID {
				t.Errorf("API check-out %+v %v", tr, err)
			}
			return nil
		})
		if err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error { _, err := tx.CheckOutDriver(dev.IMEI); return err }); !errors.Is(err, ErrNotFound) {
			t.Fatalf("API check-out with nobody checked in: %v", err)
		}
	})
}

func TestDriverEventsRecorded(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		f := newFleetFixture(t)
		dev := f.addDevice(1, f.org, f.partner.ID)
		a := f.addDriver(f.org, "a")
		b := f.addDriver(f.org, "b")
		t0 := f.clock.Now().Add(-time.Hour)
		checkIn := func(id, pin string, at time.Time) {
			t.Helper()
			ev := EventInput{DeviceEventID: id, Type: "driverCheckIn", Time: at, PinCode: pin, Lat: 48.1, Lon: 11.5}
			f.update(func(tx *Tx) error {
				ts, err := tx.ApplyDriverEvent(dev, ev)
				if err != nil {
					return err
				}
				return tx.RecordDriverEvents(dev, ts, EventInput{DeviceEventID: ev.DeviceEventID, Type: ev.Type, Time: at, Lat: ev.Lat, Lon: ev.Lon})
			})
		}
		checkIn("c1", a.Code, t0)
		checkIn("c2", b.Code, t0.Add(10*time.Minute))
		// Any other event is stamped with the driver checked in at its time.
		f.update(func(tx *Tx) error {
			_, err := tx.IngestEvent(dev, EventInput{DeviceEventID: "x1", Type: "deceleration", Time: t0.Add(5 * time.Minute)})
			return err
		})
		f.view(func(tx *Tx) error {
			evs, _, err := tx.DeviceEvents(dev.IMEI, t0.Add(-time.Minute), t0.Add(time.Hour), Page{})
			if err != nil {
				return err
			}
			var got []string
			for _, e := range evs {
				got = append(got, fmt.Sprintf("%s:%d", e.Type, e.DriverID))
			}
			want := fmt.Sprintf("driverCheckIn:%d,deceleration:%d,driverCheckOut:%d,driverCheckIn:%d", a.ID, a.ID, a.ID, b.ID)
			if strings.Join(got, ",") != want {
				t.Errorf("events %v, want %s", got, want)
			}
			if evs[0].Lat != 48.1 {
				t.Errorf("check-in event position %v, want the device's", evs[0].Lat)
			}
			return nil
		})
		var found bool
		for _, m := range f.messages(MessageEvent) {
			if ev := m.Event; ev != nil && ev.Type == EventDriverCheckIn && ev.Driver != nil && ev.Driver.ThirdPartyID == "b" && ev.Driver.ID == b.ID {
				found = true
			}
		}
		if !found {
			t.Fatal("no event webhook carries the checked-in driver")
		}
	})
}
