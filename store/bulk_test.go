package store_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

// bulkT0 is when the bulk tests' clock stands.
var bulkT0 = time.Date(2026, 5, 20, 9, 30, 0, 0, time.UTC)

// bulkFleet is what seedBulkFleet wrote.
type bulkFleet struct {
	org     int64
	devices []*Device
	code    string // the driver's PIN
}

// seedBulkFleet writes, with Update, what the bulk writes meet: an
// organization with three devices, a driver assigned to the first, event
// e-mail recipients on the third, an event stored with a device event id
// and GPS samples stored before.
func seedBulkFleet(t *testing.T, db *DB) bulkFleet {
	t.Helper()
	var f bulkFleet
	var driver int64
	err := db.Update(t.Context(), Actor{Source: "test"}, func(tx *Tx) error {
		p, err := tx.CreatePartner("Bulk partner")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Bulk fleet", nil)
		if err != nil {
			return err
		}
		f.org = o.ID
		for i := range 3 {
			d := &Device{IMEI: fxIMEI(40 + i), Name: fmt.Sprintf("Bulk %d", i), OrganizationID: o.ID, PartnerID: p.ID,
				Status: DeviceActivated}
			if err := tx.AddDevice(d); err != nil {
				return err
			}
			f.devices = append(f.devices, d)
		}
		drv := &Driver{OrganizationID: o.ID, ThirdPartyID: "bulk-1", FirstName: "Ada", IsActive: true, Code: "24680"}
		if err := tx.CreateDriver(drv); err != nil {
			return err
		}
		f.code, driver = drv.Code, drv.ID
		a := &DriverAssignment{OrganizationID: o.ID, DriverID: drv.ID, IMEI: f.devices[0].IMEI, Start: bulkT0.AddDate(0, 0, -5)}
		if err := tx.AssignDriver(a); err != nil {
			return err
		}
		if err := tx.SetEventRecipients(f.devices[2].IMEI, "deceleration", []string{"ops@bulk.example"}); err != nil {
			return err
		}
		if _, err := tx.IngestEvent(f.devices[0], EventInput{DeviceEventID: "early-1", Type: "button",
			Time: bulkT0.AddDate(0, 0, -4), Lat: 52, Lon: 4}); err != nil {
			return err
		}
		_, err = tx.AddGPS(f.devices[1], []GPSPoint{{Time: bulkT0.AddDate(0, 0, -3), Lat: 52, Lon: 4},
			{Time: bulkT0.AddDate(0, 0, -3).Add(20 * time.Minute), Lat: 52.1, Lon: 4.1}})
		return err
	})
	if err == nil {
		// The QR payload is random: one for every store compared.
		err = db.Engine().Update(t.Context(), func(rec Records) error {
			d, err := rec.Drivers().Get(driver)
			if err != nil {
				return err
			}
			d.QRPayload = "FCDRV1-BULK"
			return rec.Drivers().Update(d)
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// bulkTypes are the event types the bulk writes rotate through.
var bulkTypes = []string{"deceleration", "acceleration", "sharpTurnLeft", "button", "tailgating", "accOn"}

// writeBulk is the transaction whose writes the bulk tests compare: events
// of three devices over three days (with files, samples, device ids, a
// redelivery of a stored id and of one written earlier in it), a driver
// check-in, GPS samples with repeats of stored and earlier ones, an event
// positioned from them and a review. What each rule returned goes to
// *returned.
func writeBulk(f bulkFleet, events int, returned *[]string) func(tx *Tx) error {
	return func(tx *Tx) error {
		var out []string
		var created []int64
		ingest := func(dev *Device, in EventInput) error {
			r, err := tx.IngestEvent(dev, in)
			if err != nil {
				return fmt.Errorf("event %s: %w", in.DeviceEventID, err)
			}
			id := int64(0)
			if r.Event != nil {
				id = r.Event.ID
			}
			if r.Created {
				created = append(created, id)
			}
			out = append(out, fmt.Sprintf("event %s: %d %v %s", in.DeviceEventID, id, r.Created, r.Dropped))
			return nil
		}
		start := bulkT0.AddDate(0, 0, -3)
		for i := range events {
			dev := f.devices[i%len(f.devices)]
			in := EventInput{DeviceEventID: fmt.Sprintf("b-%d", i), Type: bulkTypes[i%len(bulkTypes)],
				Time: start.Add(time.Duration(i) * 37 * time.Minute), Lat: 52 + float64(i%100)/1e3, Lon: 4 + float64(i%77)/1e3,
				Speed: float64(i % 90), Accuracy: 4,
				Samples: []MetadataSample{{X: -0.4, Y: -5.8, Z: 9.8, Time: start.Unix() + int64(i), Speed: 12}}}
			if i%5 == 0 {
				in.Files = []EventFile{{CameraID: 1, FileID: fmt.Sprintf("clip-%d.mp4", i), FileType: FileVideo},
					{CameraID: 2, FileID: fmt.Sprintf("snap-%d.jpg", i), FileType: FileSnapshot}}
			}
			if err := ingest(dev, in); err != nil {
				return err
			}
			if i == events/2 {
				// A driver checks in on the second device half way.
				check := EventInput{Type: "driverCheckIn", Time: in.Time.Add(time.Minute), Lat: 52, Lon: 4,
					PinCode: f.code, DeviceEventID: "check-in"}
				ts, err := tx.ApplyDriverEvent(f.devices[1], check)
				if err != nil {
					return err
				}
				if err := tx.RecordDriverEvents(f.devices[1], ts, check); err != nil {
					return err
				}
			}
		}
		for _, again := range []string{"early-1", "b-4"} {
			dev := f.devices[0]
			if again == "b-4" {
				dev = f.devices[1]
			}
			if err := ingest(dev, EventInput{DeviceEventID: again, Type: "button", Time: bulkT0, Lat: 1, Lon: 1}); err != nil {
				return err
			}
		}
		for d, dev := range f.devices {
			var pts []GPSPoint
			for k := range 3 * 24 * 6 {
				at := start.Add(time.Duration(k) * 10 * time.Minute).Add(time.Duration(d) * time.Millisecond)
				pts = append(pts, GPSPoint{Time: at, Lat: 52 + float64(k%500)/1e4, Lon: 4 + float64(k%300)/1e4,
					Speed: float64(k % 120), Accuracy: 5, Heading: float64(k % 360)})
				if k%50 == 0 {
					// The same millisecond again, which is not stored.
					pts = append(pts, GPSPoint{Time: at.Add(300 * time.Microsecond), Lat: 1, Lon: 1})
				}
			}
			for _, batch := range [][]GPSPoint{pts[:len(pts)/2], pts[len(pts)/3:]} {
				added, err := tx.AddGPS(dev, batch)
				if err != nil {
					return err
				}
				out = append(out, fmt.Sprintf("gps %s: %d of %d", dev.IMEI, len(added), len(batch)))
			}
		}
		if err := ingest(f.devices[2], EventInput{DeviceEventID: "from-gps", Type: "button",
			Time: start.Add(25 * time.Hour).Add(3 * time.Minute), PositionFromGPS: true}); err != nil {
			return err
		}
		reviewed, err := tx.ReviewEvent(created[3], EventReview{Comment: "seen", AudienceName: "partner"})
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("reviewed %d with %d comments", reviewed.ID, len(reviewed.Comments)))
		*returned = out
		return nil
	}
}

// readBulk is what db answers about f's devices: their event pages, the
// organization's events by day (the hourly counts, where an engine keeps
// them), their GPS, the messages and the queued e-mails.
func readBulk(t *testing.T, db *DB, f bulkFleet) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := db.View(t.Context(), func(tx *Tx) error {
		from, to := bulkT0.AddDate(0, 0, -5), bulkT0.Add(time.Hour)
		for _, d := range f.devices {
			evs, n, err := tx.DeviceEvents(d.IMEI, from, to, Page{})
			if err != nil {
				return err
			}
			out["events of "+d.IMEI] = fmt.Sprintf("%d %s", n, canonicalJSON(t, evs))
			pts, err := tx.GPS(d.IMEI, from, to, 0)
			if err != nil {
				return err
			}
			out["gps of "+d.IMEI] = canonicalJSON(t, pts)
		}
		for day := from; day.Before(to); day = day.Add(24 * time.Hour) {
			for _, q := range []EventQuery{{Start: day, End: day.Add(24*time.Hour - time.Millisecond)},
				{Start: day, End: day.Add(24*time.Hour - time.Millisecond), Types: map[string]bool{"deceleration": true}}} {
				_, n, err := tx.OrgEvents(f.org, q, Page{Limit: 1})
				if err != nil {
					return err
				}
				out[fmt.Sprintf("organization events %s %v", day.Format(time.DateOnly), q.Types != nil)] = fmt.Sprint(n)
			}
		}
		msgs, err := tx.MessagesAfter(0, 0)
		if err != nil {
			return err
		}
		out["messages"] = canonicalJSON(t, msgs)
		mail, err := tx.QueuedEventMail()
		if err != nil {
			return err
		}
		out["event mail"] = canonicalJSON(t, mail)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The same transaction under BulkUpdate and under Update returns the same
// from every rule and leaves the same records of every kind (read out as a
// copy reads them: ids, sequences, indexes' answers) on every engine.
func TestBulkUpdateWritesWhatUpdateWrites(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		clock := storetest.NewClock(bulkT0)
		var got [2]map[Kind][]string
		var seqs [2]map[Sequence]int64
		var reads [2]map[string]string
		var returned [2][]string
		for i, bulk := range []bool{false, true} {
			db := storetest.Open(t, storetest.WithClock(clock.Now))
			f := seedBulkFleet(t, db)
			update := db.Update
			if bulk {
				update = db.BulkUpdate
			}
			if err := update(t.Context(), Actor{Source: "device"}, writeBulk(f, 150, &returned[i])); err != nil {
				t.Fatal(err)
			}
			got[i], reads[i] = dumpRecords(t, db), readBulk(t, db, f)
			err := db.Engine().(Dumper).Dump(t.Context(), func(d Dump) error {
				var err error
				seqs[i], err = d.Sequences()
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(returned[0], returned[1]) {
			t.Errorf("the rules returned\n %s\nunder BulkUpdate, and under Update\n %s",
				strings.Join(returned[1], "\n "), strings.Join(returned[0], "\n "))
		}
		for _, k := range Kinds {
			if !slices.Equal(got[1][k], got[0][k]) {
				t.Errorf("the %s differ:\n bulk %s\nplain %s", k, strings.Join(got[1][k], "\n      "),
					strings.Join(got[0][k], "\n      "))
			}
		}
		if !maps.Equal(seqs[1], seqs[0]) {
			t.Errorf("the sequences stand at %v after BulkUpdate, at %v after Update", seqs[1], seqs[0])
		}
		for what, v := range reads[0] {
			if reads[1][what] != v {
				t.Errorf("%s reads\n %s\nafter BulkUpdate, and after Update\n %s", what, reads[1][what], v)
			}
		}
		if n := len(got[1][KindEvents]); n < 150 {
			t.Errorf("%d events stored", n)
		}
	})
}

// A bulk transaction that fails leaves nothing of what it wrote.
func TestBulkUpdateFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		clock := storetest.NewClock(bulkT0)
		db := storetest.Open(t, storetest.WithClock(clock.Now))
		f := seedBulkFleet(t, db)
		before := dumpRecords(t, db)
		failed := errors.New("given up")
		err := db.BulkUpdate(t.Context(), Actor{Source: "device"}, func(tx *Tx) error {
			var returned []string
			if err := writeBulk(f, 40, &returned)(tx); err != nil {
				return err
			}
			return failed
		})
		if !errors.Is(err, failed) {
			t.Fatalf("BulkUpdate returned %v, want the transaction's error", err)
		}
		after := dumpRecords(t, db)
		for _, k := range Kinds {
			if !slices.Equal(after[k], before[k]) {
				t.Errorf("the %s changed:\n %s\nwas\n %s", k, strings.Join(after[k], "\n "), strings.Join(before[k], "\n "))
			}
		}
	})
}
