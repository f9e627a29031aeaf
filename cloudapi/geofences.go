package cloudapi

import (
	"fmt"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// geofenceBody is one geofence of PUT /devices/{imei}/geofences; pointers
// tell a missing member from a zero one.
type geofenceBody struct {
	ID     *int64   `json:"id"`
	Name   *string  `json:"name"`
	Lat    *float64 `json:"lat"`
	Lon    *float64 `json:"lon"`
	Radius *float64 `json:"radius"`
}

// putGeofences handles PUT /devices/{imei}/geofences: replaces the device's
// geofences (up to 99 circles) and pushes them to the device with its
// configuration. Geofences left out are deleted.
func (s *Server) putGeofences(c *gin.Context) error {
	var body []geofenceBody
	if err := decode(c, &body); err != nil {
		return err
	}
	if body == nil {
		return badRequest("the request body must be an array of geofences ([] deletes them all)")
	}
	fences := make([]store.Geofence, 0, len(body))
	for i, g := range body {
		for _, m := range []struct {
			name    string
			missing bool
		}{{"id", g.ID == nil}, {"name", g.Name == nil}, {"lat", g.Lat == nil}, {"lon", g.Lon == nil}, {"radius", g.Radius == nil}} {
			if m.missing {
				return badField(fmt.Sprintf("[%d].%s", i, m.name), "is required")
			}
		}
		fences = append(fences, store.Geofence{ID: *g.ID, Name: *g.Name, Lat: *g.Lat, Lon: *g.Lon, Radius: *g.Radius})
	}
	if err := store.ValidateGeofences(fences); err != nil {
		return err
	}
	err := s.updatePathDevice(c, func(tx *store.Tx, d *store.Device) error { return tx.SetGeofences(d.IMEI, fences) })
	if err != nil {
		return err
	}
	return ok(c, fences)
}

// getGeofences handles GET /devices/{imei}/geofences.
func (s *Server) getGeofences(c *gin.Context) error {
	var fences []store.Geofence
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		fences, err = tx.Geofences(d.IMEI)
		return err
	})
	if err != nil {
		return err
	}
	if fences == nil {
		fences = []store.Geofence{}
	}
	return ok(c, fences)
}
