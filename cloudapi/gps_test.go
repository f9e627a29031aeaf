package cloudapi

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

func TestGPS(t *testing.T) {
	t.Parallel()
	w := newDeviceWorld(t, 2)
	imei := w.imeis[0]
	t0 := time.Date(2026, 2, 10, 8, 0, 0, 0, time.UTC)
	err := w.db.Update(t.Context(), store.Actor{Source: "device"}, func(tx *store.Tx) error {
		var pts []store.GPSPoint
		for i := 0; i < 5; i++ {
			pts = append(pts, store.GPSPoint{Time: t0.Add(time.Duration(i) * 1500 * time.Millisecond), Lat: 32.1 + float64(i)/1000,
				Lon: 34.8, Alt: 40, Speed: 36, Accuracy: 5})
		}
		for i, add := range [][]store.GPSPoint{pts, {{Time: t0, Lat: 1, Lon: 1, Speed: 10}}} {
			d, err := tx.Device(w.imeis[i])
			if err != nil {
				return err
			}
			if _, err := tx.AddGPS(d, add); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	q := func(start, end string) string {
		return "/v2/devices/" + imei + "/gps?start=" + url.QueryEscape(start) + "&end=" + url.QueryEscape(end)
	}
	r := w.do("GET", q("2026-02-10T08:00:00Z", "2026-02-10T09:00:00Z"), w.viewer, nil).want(http.StatusOK)
	samples := r.list("data")
	if len(samples) != 5 {
		t.Fatalf("%d samples: %s", len(samples), r.raw)
	}
	if r.num("data.1.time") != float64(t0.Unix())+1.5 || r.num("data.0.speed") != 10 || r.num("data.0.lat") != 32.1 ||
		r.num("data.0.accuracy") != 5 || r.num("data.0.alt") != 40 {
		t.Fatalf("sample %s", r.raw)
	}
	r = w.do("GET", q("2026-02-10T08:00:01Z", "2026-02-10T08:00:03Z")+"&limit=1", w.viewer, nil).want(http.StatusOK)
	if len(r.list("data")) != 1 || r.num("data.0.time") != float64(t0.Unix())+1.5 {
		t.Fatalf("window and limit: %s", r.raw)
	}
	r = w.do("GET", q("2026-02-10T10:00:00+02:00", "2026-02-10T08:00:01.5Z"), w.viewer, nil).want(http.StatusOK)
	if len(r.list("data")) != 2 {
		t.Fatalf("zone offset and fractional end: %s", r.raw)
	}

	spans := []struct {
		name, start, end, extra, frag string
	}{
		{"no start", "", "2026-02-10T09:00:00Z", "", "start is required"},
		{"no end", "2026-02-10T08:00:00Z", "", "", "end is required"},
		{"not ISO 8601", "10/02/2026", "2026-02-10T09:00:00Z", "", "start must be an ISO 8601"},
		{"end without a zone", "2026-02-10T08:00:00Z", "2026-02-10T08:00:01.5", "", "end has no time zone"},
		{"end before start", "2026-02-10T09:00:00Z", "2026-02-10T08:00:00Z", "", "end must not be before start"},
		{"empty span", "2026-02-10T09:00:00Z", "2026-02-10T09:00:00Z", "", "start must be before end"},
		{"over 31 days", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00.001Z", "", "at most 31 days"},
		{"limit 0", "2026-02-10T08:00:00Z", "2026-02-10T09:00:00Z", "&limit=0", "limit must be an integer from 1 to 10000"},
		{"limit too high", "2026-02-10T08:00:00Z", "2026-02-10T09:00:00Z", "&limit=10001", "limit"},
	}
	for _, tc := range spans {
		t.Run(tc.name, func(t *testing.T) {
			w.do("GET", q(tc.start, tc.end)+tc.extra, w.viewer, nil).wantError(http.StatusBadRequest, nameBadRequest, tc.frag)
		})
	}
	w.do("GET", q("2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"), w.viewer, nil).want(http.StatusOK)

	// Scoped tokens: only with the GPS feature, only for their device.
	gps := w.scopedToken(imei, FeatureDeviceGPS)
	w.do("GET", q("2026-02-10T08:00:00Z", "2026-02-10T09:00:00Z"), gps, nil).want(http.StatusOK)
	w.do("GET", "/v2/devices/"+w.imeis[1]+"/gps?start=2026-02-10T08:00:00Z&end=2026-02-10T09:00:00Z", gps, nil).
		wantError(http.StatusNotFound, nameNotFound)
	w.do("GET", q("2026-02-10T08:00:00Z", "2026-02-10T09:00:00Z"), w.scopedToken(imei, FeatureDeviceEvent), nil).
		wantError(http.StatusForbidden, nameForbidden, FeatureDeviceGPS)
}
