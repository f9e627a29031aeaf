package cloudapi

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

// moveTarget is where a device goes after it leaves its organization: the
// organization, a token that may add the device there, and a token of the
// new owner, who must see nothing of the device's past.
type moveTarget struct {
	orgID    int64
	addToken string
	owner    string
	// sameOrg: the device stays in its shared organization, whose drivers
	// it still accepts.
	sameOrg bool
}

// TestDeviceMoveLeavesThePastBehind: a device records events with media,
// GPS, a trip with a checked-in driver, a driver assignment, an alarm, a
// webhook delivery, data usage and SD card recordings for its
// organization, streams live video to it, is removed
// and added to another organization (of the same partner, of another
// partner, or to another partner sharing the organization). The new owner
// sees none of it through any device endpoint, with counts to match, sees
// what is recorded under its ownership (an event the device buffered
// before the move included), and the old owner keeps its events but no
// longer watches the live stream.
func TestDeviceMoveLeavesThePastBehind(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		to   func(m *mediaEnv) moveTarget
	}{
		{"to another organization of the same partner", func(m *mediaEnv) moveTarget {
			org := m.newOrg(m.partnerToken, "Second fleet").id
			return moveTarget{orgID: org, addToken: m.partnerToken, owner: m.orgUser(org, "admin@second.example", store.AccessEditor)}
		}},
		{"to another partner's organization", func(m *mediaEnv) moveTarget {
			_, token := m.newPartner("Next partner", "next@example.com")
			org := m.newOrg(token, "Next fleet").id
			return moveTarget{orgID: org, addToken: token, owner: m.orgUser(org, "admin@next.example", store.AccessEditor)}
		}},
		{"to another partner sharing the organization", func(m *mediaEnv) moveTarget {
			return moveTarget{orgID: m.org.ID, addToken: m.foreignToken, owner: m.foreignToken, sameOrg: true}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMediaEnv(t)
			to := tc.to(m)
			imei := m.dev.IMEI
			t0 := m.clock.Now()
			at := func(d time.Duration) time.Time { return t0.Add(d) }
			ms := func(d time.Duration) int64 { return at(d).UnixMilli() }

			// The first owner's past.
			var pin string
			m.storeUpdate(func(tx *store.Tx) error {
				d := &store.Driver{OrganizationID: m.org.ID, ThirdPartyID: "ann", FirstName: "Ann"}
				if err := tx.CreateDriver(d); err != nil {
					return err
				}
				pin = d.Code
				return tx.AssignDriver(&store.DriverAssignment{OrganizationID: m.org.ID, DriverID: d.ID, IMEI: imei, Start: at(-time.Hour)})
			})
			m.record(imei,
				protocol.Event{ID: "in", Type: "driverCheckIn", Time: ms(time.Minute), PinCode: pin},
				protocol.Event{ID: "on", Type: "accOn", Time: ms(time.Minute)},
				protocol.Event{ID: "crash", Type: "accident", Time: ms(2 * time.Minute), Files: twoCameraFiles("old-clip")},
				protocol.Event{ID: "off", Type: "accOff", Time: ms(5 * time.Minute)})
			m.recordGPS(imei, at(time.Minute), 25)
			m.sweep()
			m.do("POST", devPath(imei, "/alarm-simulator"), m.partnerToken, map[string]any{
				"alarmDefinitionId": 1002, "createdAt": isoTime(at(-3 * time.Minute))}).want(http.StatusOK)
			m.storeUpdate(func(tx *store.Tx) error {
				return tx.EnqueueDelivery(&store.Delivery{OrganizationID: m.org.ID, URL: "https://hooks.example.com/", IMEI: imei,
					Type: store.WebhookTypeEvent, Body: []byte(`{"type":"event"}`)})
			})
			m.cmd.set(imei, func(d *fakeDevice) { d.recordings[1] = [][2]int64{{at(0).Unix(), at(6 * time.Minute).Unix()}} })
			m.storeUpdate(func(tx *store.Tx) error {
				return tx.RecordDataUsage(imei, store.DataUsage{PeriodStart: at(-48 * time.Hour), BytesUp: 1000, BytesDown: 2000})
			})
			if usage := m.do("GET", devPath(imei, "/data-usage"), m.partnerToken, nil).want(http.StatusOK); len(usage.list("data.periods")) != 1 {
				t.Fatalf("the first owner's data usage: %s", usage.raw)
			}

			span := window(at(-time.Hour), at(time.Hour))
			before := m.do("GET", devPath(imei, "/events"+span), m.partnerToken, nil).want(http.StatusOK)
			oldEvents := int(before.num("metadata.count"))
			var crashID int64
			for _, ev := range before.list("data") {
				if ev := ev.(map[string]any); ev["eventType"] == "accident" {
					crashID = int64(ev["id"].(float64))
				}
			}
			if oldEvents < 3 || crashID == 0 {
				t.Fatalf("the first owner's events: %s", before.raw)
			}
			m.do("GET", fileLinkPath(imei, "old-clip", "video", 1), m.partnerToken, nil).want(http.StatusOK)

			watch := m.do("POST", devPath(imei, "/connect-media?cameraId=1"), m.partnerToken, nil).want(http.StatusOK).str("data.url")

			// The move.
			m.clock.Advance(10 * time.Minute)
			m.do("DELETE", orgPath(m.org.ID, "/devices/"+imei), m.partnerToken, nil).want(http.StatusOK)
			m.clock.Advance(time.Minute)
			moved := m.clock.Now()
			m.do("POST", orgPath(to.orgID, "/devices"), to.addToken, map[string]any{"imei": imei, "name": "Moved"}).want(http.StatusOK)
			m.cmd.set(imei, func(d *fakeDevice) { d.online = true }) // the device connects again

			// The first owner's live stream ended with the removal.
			res, err := m.srv.Client().Get(watch)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusNotFound {
				t.Errorf("the first owner's live stream answers %d after the move, want 404", res.StatusCode)
			}

			// The new owner sees none of the past.
			nothing := func(what, path string) {
				t.Helper()
				r := m.do("GET", path, to.owner, nil).want(http.StatusOK)
				if len(r.list("data")) != 0 || r.get("metadata") != nil && r.num("metadata.count") != 0 {
					t.Errorf("%s of the new owner: %s", what, r.raw)
				}
			}
			nothing("device events", devPath(imei, "/events"+span))
			nothing("GPS", devPath(imei, "/gps"+span))
			nothing("driving history", q("/v2/driving-history?imei="+imei, to.orgID))
			nothing("alarms", q("/v2/alarms?imei="+imei, to.orgID))
			nothing("webhook deliveries", orgPath(to.orgID, "/webhook-deliveries?imei="+imei))
			orgEvents := m.do("POST", orgPath(to.orgID, "/events"+span), to.owner, nil).want(http.StatusOK)
			if slices.ContainsFunc(orgEvents.list("data"), func(ev any) bool { return ev.(map[string]any)["id"].(float64) == float64(crashID) }) {
				t.Errorf("the new owner's organization events hold the old accident: %s", orgEvents.raw)
			}
			old := devPath(imei, fmt.Sprintf("/events/%d", crashID))
			m.do("GET", old, to.owner, nil).wantError(http.StatusNotFound, nameNotFound)
			m.do("DELETE", old, to.owner, nil).wantError(http.StatusNotFound, nameNotFound)
			m.do("PATCH", "/v2/devices/event-review-state", to.owner, map[string]any{"eventIds": []int64{crashID},
				"eventReviewState": map[string]any{"status": "resolved"}}).wantError(http.StatusNotFound, nameNotFound)
			for _, ft := range []string{"video", "snapshot"} {
				m.do("GET", fileLinkPath(imei, "old-clip", ft, 1), to.owner, nil).wantError(http.StatusNotFound, nameNotFound)
			}
			usage := m.do("GET", devPath(imei, "/data-usage"), to.owner, nil).want(http.StatusOK)
			if len(usage.list("data.periods")) != 0 || usage.num("data.mobileTx") != 0 || usage.num("data.mobileRx") != 0 {
				t.Errorf("data usage of the first owner's time: %s", usage.raw)
			}
			ranges := m.do("GET", devPath(imei, "/recording-ranges"), to.owner, nil).want(http.StatusOK)
			if n := len(ranges.list("data.0.intervals")); n != 0 {
				t.Errorf("recording ranges of the first owner's time: %s", ranges.raw)
			}
			m.do("POST", devPath(imei, "/virtual-event"), to.owner, map[string]any{"time": isoTime(at(2 * time.Minute))}).
				wantError(http.StatusBadRequest, nameBadRequest, "time", "previous organization")
			m.storeView(func(tx *store.Tx) error {
				as, err := tx.DeviceAssignments(imei)
				if err != nil || len(as) != 1 || !as[0].End.Equal(moved.Add(-time.Minute)) {
					t.Errorf("the first owner's driver assignment did not end with the removal: %+v %v", as, err)
				}
				creds, err := tx.DriverCredentials(imei)
				if err != nil || !to.sameOrg && slices.ContainsFunc(creds, func(c store.DriverCredential) bool { return c.PinCode == pin }) {
					t.Errorf("the moved device accepts the first owner's driver: %+v %v", creds, err)
				}
				return nil
			})

			// What the device records now is the new owner's, an event it
			// buffered before the move and sends only now included.
			m.record(imei,
				protocol.Event{ID: "late", Type: "accident", Time: ms(4 * time.Minute), Files: twoCameraFiles("late-clip")},
				protocol.Event{ID: "on2", Type: "accOn", Time: ms(20 * time.Minute)},
				protocol.Event{ID: "off2", Type: "accOff", Time: ms(30 * time.Minute)})
			m.recordGPS(imei, at(20*time.Minute), 10)
			m.sweep()
			m.cmd.set(imei, func(d *fakeDevice) {
				d.recordings[1] = append(d.recordings[1], [2]int64{at(20 * time.Minute).Unix(), at(30 * time.Minute).Unix()})
			})
			evs := m.do("GET", devPath(imei, "/events"+span), to.owner, nil).want(http.StatusOK)
			if evs.num("metadata.count") != 3 || len(evs.list("data")) != 3 || evs.str("data.0.eventType") != "accident" {
				t.Errorf("the new owner's events: %s", evs.raw)
			}
			page := m.do("GET", devPath(imei, "/events"+span+"&limit=1&offset=2"), to.owner, nil).want(http.StatusOK)
			if page.num("metadata.count") != 3 || len(page.list("data")) != 1 || page.str("data.0.eventType") != "accOff" {
				t.Errorf("the new owner's last event page: %s", page.raw)
			}
			m.do("GET", devPath(imei, fmt.Sprintf("/events/%d", evs.id("data.0.id"))), to.owner, nil).want(http.StatusOK)
			m.do("GET", fileLinkPath(imei, "late-clip", "video", 2), to.owner, nil).want(http.StatusOK)
			gps := m.do("GET", devPath(imei, "/gps"+span), to.owner, nil).want(http.StatusOK)
			if n := len(gps.list("data")); n != 10 || gps.num("data.0.time") != float64(at(20*time.Minute).Unix()) {
				t.Errorf("the new owner's GPS (%d samples): %s", n, gps.raw)
			}
			trips := m.do("GET", q("/v2/driving-history?imei="+imei, to.orgID), to.owner, nil).want(http.StatusOK)
			if trips.num("metadata.count") != 1 || trips.str("data.0.startTime") != isoTime(at(20*time.Minute)) ||
				trips.get("data.0.driver") != nil || len(trips.list("data.0.driverHistory")) != 0 {
				t.Errorf("the new owner's trips: %s", trips.raw)
			}
			ranges = m.do("GET", devPath(imei, "/recording-ranges"), to.owner, nil).want(http.StatusOK)
			if ranges.str("data.0.intervals.0.start") != isoTime(at(20*time.Minute)) || len(ranges.list("data.0.intervals")) != 1 {
				t.Errorf("the new owner's recording ranges: %s", ranges.raw)
			}
			m.do("POST", devPath(imei, "/virtual-event"), to.owner, map[string]any{"time": isoTime(moved), "mediaType": "none"}).
				want(http.StatusOK)

			// The first owner keeps its events until its retention purges them.
			kept := m.do("POST", orgPath(m.org.ID, "/events"+span), m.partnerToken, nil).want(http.StatusOK)
			if int(kept.num("metadata.count")) != oldEvents {
				t.Errorf("the first owner's organization events after the move: %s", kept.raw)
			}
			// ... without the name the device has now, which is its new owner's.
			for _, ev := range kept.list("data") {
				if name, named := ev.(map[string]any)["deviceName"]; named {
					t.Errorf("the first owner's event names the device %v", name)
				}
			}
			alarms := m.do("GET", q("/v2/alarms?imei="+imei, m.org.ID), m.partnerToken, nil).want(http.StatusOK)
			if alarms.num("metadata.count") != 1 || alarms.get("data.0.deviceName") != nil {
				t.Errorf("the first owner's alarm after the move: %s", alarms.raw)
			}
			if n := m.do("GET", q("/v2/alarms?name=Moved", m.org.ID), m.partnerToken, nil).want(http.StatusOK).num("metadata.count"); n != 0 {
				t.Errorf("%v of the first owner's alarms found by the new owner's name for the device", n)
			}
		})
	}
}

// record stores device events of imei as the broker ingests them.
func (m *mediaEnv) record(imei string, evs ...protocol.Event) {
	m.t.Helper()
	for _, ev := range evs {
		err := m.db.Update(m.t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error {
			dev, err := tx.Device(imei)
			if err != nil {
				return err
			}
			return broker.IngestEvent(tx, dev, ev)
		})
		if err != nil {
			m.t.Fatal(err)
		}
	}
}

// recordGPS stores n GPS samples of imei, one every ten seconds from start,
// as the broker ingests them.
func (m *mediaEnv) recordGPS(imei string, start time.Time, n int) {
	m.t.Helper()
	err := m.db.Update(m.t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error {
		dev, err := tx.Device(imei)
		if err != nil {
			return err
		}
		var pts []store.GPSPoint
		for i := range n {
			pts = append(pts, store.GPSPoint{Time: start.Add(time.Duration(i) * 10 * time.Second), Lat: 52 + float64(i)/1000, Lon: 4, Speed: 40})
		}
		_, err = broker.IngestGPS(tx, dev, pts)
		return err
	})
	if err != nil {
		m.t.Fatal(err)
	}
}

// storeUpdate runs fn in a store transaction of the test.
func (m *mediaEnv) storeUpdate(fn func(tx *store.Tx) error) {
	m.t.Helper()
	if err := m.db.Update(m.t.Context(), store.Actor{Source: "test"}, fn); err != nil {
		m.t.Fatal(err)
	}
}

// storeView runs fn in a read transaction.
func (m *mediaEnv) storeView(fn func(tx *store.Tx) error) {
	m.t.Helper()
	if err := m.db.View(m.t.Context(), fn); err != nil {
		m.t.Fatal(err)
	}
}
