package cloudapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/broker"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
)

func TestDrivingHistory(t *testing.T) {
	t.Parallel()
	e := newFleetEnv(t)
	e.do("POST", "/v2/drivers", e.adminToken, data(driverItem(0, "a", "firstName", "Ann"), driverItem(0, "b"))).want(http.StatusCreated)
	t0 := e.clock.Now()
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	pins := map[string]string{}
	e.fleetView(func(tx *store.Tx) error {
		for _, tp := range []string{"a", "b"} {
			d, err := tx.DriverByThirdPartyID(e.org.ID, tp)
			if err != nil {
				return err
			}
			pins[tp] = d.Code
		}
		return nil
	})
	feed := func(imei string, evs ...protocol.Event) {
		e.fleetUpdate(func(tx *store.Tx) error {
			dev, _ := tx.Device(imei)
			for _, ev := range evs {
				if err := broker.IngestEvent(tx, dev, ev); err != nil {
					return err
				}
			}
			return nil
		})
	}
	feed(e.devices[0],
		protocol.Event{Type: "driverCheckIn", Time: ms(0), PinCode: pins["a"]},
		protocol.Event{Type: "accOn", Time: ms(time.Minute)},
		protocol.Event{Type: "driverCheckIn", Time: ms(10 * time.Minute), PinCode: pins["b"]},
		protocol.Event{Type: "accOff", Time: ms(21 * time.Minute)},
		protocol.Event{Type: "accOn", Time: ms(30 * time.Minute)})
	feed(e.devices[1], protocol.Event{Type: "accOn", Time: ms(2 * time.Minute)}, protocol.Event{Type: "accOff", Time: ms(3 * time.Minute)})
	feed(e.devices[3], protocol.Event{Type: "accOn", Time: ms(2 * time.Minute)}, protocol.Event{Type: "accOff", Time: ms(4 * time.Minute)})
	e.clock.Advance(40 * time.Minute)

	r := e.do("GET", "/v2/driving-history?order=asc", e.viewerToken, nil).want(http.StatusOK)
	if r.num("metadata.count") != 3 {
		t.Fatalf("org one has %v trips, want 3: %s", r.num("metadata.count"), r.raw)
	}
	if r.str("data.0.imei") != e.devices[0] || r.num("data.0.durationSeconds") != 1200 || r.str("data.0.driver.firstName") != "Ann" ||
		len(r.list("data.0.driverHistory")) != 2 || r.str("data.0.driverHistory.1.driver.driverThirdPartyId") != "b" ||
		r.str("data.0.endTime") != isoTime(t0.Add(21*time.Minute)) || r.get("data.0.inProgress") != false {
		t.Fatalf("first trip %s", r.raw)
	}
	if r.get("data.2.inProgress") != true || r.num("data.2.durationSeconds") != 600 || r.str("data.2.endTime") != "" {
		t.Fatalf("trip in progress %s", r.raw)
	}
	tests := []struct {
		name  string
		token string
		path  string
		want  float64
	}{
		{"driver a", e.adminToken, "/v2/driving-history?driverThirdPartyId=a", 1},
		{"driver b", e.adminToken, "/v2/driving-history?driverThirdPartyId=b", 2},
		{"device", e.adminToken, "/v2/driving-history?imei=" + e.devices[1], 1},
		{"time range", e.adminToken, "/v2/driving-history?start=" + isoTime(t0.Add(25*time.Minute)), 1},
		{"partner, organization two", e.partnerToken, q("/v2/driving-history", e.org2.ID), 1},
		{"page", e.adminToken, "/v2/driving-history?limit=1&offset=2", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := e.do("GET", tt.path, tt.token, nil).want(http.StatusOK).num("metadata.count"); n != tt.want {
				t.Fatalf("count %v, want %v", n, tt.want)
			}
		})
	}
	e.do("GET", "/v2/driving-history", e.partnerToken, nil).wantError(400, nameBadRequest, "organizationId")
	e.do("GET", q("/v2/driving-history", e.org.ID), e.rivalToken, nil).wantError(404, nameNotFound)
	e.do("GET", "/v2/driving-history?imei="+e.devices[3], e.adminToken, nil).wantError(404, nameNotFound)
	e.do("GET", "/v2/driving-history?driverThirdPartyId=zz", e.adminToken, nil).wantError(404, nameNotFound)
	e.do("GET", "/v2/driving-history?start=2026-03-02T00:00:00Z&end=2026-03-01T00:00:00Z", e.adminToken, nil).wantError(400, nameBadRequest, "end")
	e.do("GET", "/v2/driving-history?start=now", e.adminToken, nil).wantError(400, nameBadRequest, "start")
}
