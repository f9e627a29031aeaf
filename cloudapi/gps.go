package cloudapi

import (
	"fmt"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// maxTimeSpan is the longest start-to-end span of a time-range query.
const maxTimeSpan = 31 * 24 * time.Hour

// maxGPSSamples bounds one GPS answer; a caller continues from the last
// sample's time.
const maxGPSSamples = 10000

// timeSpan reads the start and end query parameters: start before end, at
// most 31 days apart.
func timeSpan(c *gin.Context) (time.Time, time.Time, error) {
	start, err := parseAPITime("start", c.Query("start"))
	if err != nil {
		return start, start, err
	}
	end, err := parseAPITime("end", c.Query("end"))
	if err != nil {
		return start, end, err
	}
	if err := checkOrder(start, end); err != nil {
		return start, end, err
	}
	switch {
	case !start.Before(end):
		return start, end, badField("start", "must be before end")
	case end.Sub(start) > maxTimeSpan:
		return start, end, badField("end", "must be at most 31 days after start")
	}
	return start, end, nil
}

// gpsSampleDTO is one GPS sample as the reference contract shapes it.
type gpsSampleDTO struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
	Alt float64 `json:"alt"`
	// Time is in seconds since the epoch, with milliseconds as the fraction.
	Time float64 `json:"time"`
	// Speed is in meters per second.
	Speed    float64 `json:"speed"`
	Accuracy float64 `json:"accuracy"`
}

// getGPS handles GET /devices/{imei}/gps?start&end[&limit]: the samples the
// device reported in the span, oldest first, at most limit (10,000 by
// default and at most). To read on, ask again from just after the last
// sample's time. It recovers what GPS webhooks missed.
func (s *Server) getGPS(c *gin.Context) error {
	start, end, err := timeSpan(c)
	if err != nil {
		return err
	}
	limit := maxGPSSamples
	if v, given := c.GetQuery("limit"); given {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxGPSSamples {
			return badField("limit", fmt.Sprintf("must be an integer from 1 to %d", maxGPSSamples))
		}
		limit = n
	}
	var points []store.GPSPoint
	err = s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		points, err = tx.DeviceGPS(d, start, end, limit)
		return err
	})
	if err != nil {
		return err
	}
	out := make([]gpsSampleDTO, len(points))
	for i, p := range points {
		out[i] = toGPSSample(p)
	}
	return ok(c, out)
}

// toGPSSample shapes a stored GPS point as the contract does: time in
// seconds, speed in meters per second.
func toGPSSample(p store.GPSPoint) gpsSampleDTO {
	return gpsSampleDTO{Lat: p.Lat, Lon: p.Lon, Alt: p.Alt, Time: float64(p.Time.UnixMilli()) / 1000,
		Speed: p.Speed / 3.6, Accuracy: p.Accuracy}
}
