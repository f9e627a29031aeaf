package cloudapi

import (
	"math"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// tripDriverDTO is one driver's stretch of a trip.
type tripDriverDTO struct {
	Driver    *driverDTO `json:"driver"`
	StartTime string     `json:"startTime"`
	EndTime   string     `json:"endTime,omitempty"`
}

// tripDTO is one trip of the driving history: from power on to power off.
type tripDTO struct {
	ID             int64      `json:"id"`
	IMEI           string     `json:"imei"`
	OrganizationID int64      `json:"organizationId"`
	StartTime      string     `json:"startTime"`
	EndTime        string     `json:"endTime,omitempty"`
	InProgress     bool       `json:"inProgress"`
	Duration       int64      `json:"durationSeconds"`
	Distance       float64    `json:"distanceMeters"`
	Driver         *driverDTO `json:"driver"`
	// DriverHistory lists who drove, in order, when the driver changed during the trip.
	DriverHistory []tripDriverDTO `json:"driverHistory"`
}

// listDrivingHistory handles GET /driving-history: trips filtered by
// organization (required with a partner token), device, driver and time.
func (s *Server) listDrivingHistory(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	desc, err := queryOrder(c)
	if err != nil {
		return err
	}
	if v := c.DefaultQuery("sort", "createdAt"); v != "createdAt" {
		return badField("sort", "must be createdAt")
	}
	f := store.TripFilter{Descending: desc}
	if f.Start, f.End, err = queryRange(c); err != nil {
		return err
	}
	pr := principal(c)
	if pr.IsPartner() {
		if id, err := queryOrgID(c); err != nil || id == 0 {
			return badField("organizationId", "is required as a query parameter with a partner token")
		}
		f.PartnerID = pr.PartnerID
	}
	var out []tripDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		orgs, err := s.readOrgs(c, tx)
		if err != nil {
			return err
		}
		f.OrganizationIDs = orgIDs(orgs)
		if imei := c.Query("imei"); imei != "" {
			d, err := s.deviceByIMEI(c, tx, imei)
			if err != nil || orgs[d.OrganizationID] == nil {
				return notFound("device " + imei)
			}
			f.IMEI = imei
		}
		if tp := c.Query("driverThirdPartyId"); tp != "" {
			for id := range orgs {
				if d, err := tx.DriverByThirdPartyID(id, tp); err == nil {
					f.DriverID = d.ID
				}
			}
			if f.DriverID == 0 {
				return notFound("driver " + strconv.Quote(tp))
			}
		}
		trips, n, err := tx.Trips(f, p)
		if err != nil {
			return err
		}
		total = n
		drivers := map[int64]*driverDTO{}
		driver := func(id int64) *driverDTO {
			if id == 0 {
				return nil
			}
			if d, found := drivers[id]; found {
				return d
			}
			var dto *driverDTO
			if d, err := tx.Driver(id); err == nil {
				v := toDriverDTO(d, "")
				dto = &v
			} else {
				dto = &driverDTO{ID: strconv.FormatInt(id, 10)}
			}
			drivers[id] = dto
			return dto
		}
		now := tx.Now()
		for _, t := range trips {
			dto := tripDTO{ID: t.ID, IMEI: t.IMEI, OrganizationID: t.OrganizationID, StartTime: isoTime(t.Start),
				EndTime: isoTime(t.End), InProgress: t.End.IsZero(), Duration: int64(t.Duration(now) / time.Second),
				Distance: math.Round(t.DistanceMeters*10) / 10, Driver: driver(t.DriverID), DriverHistory: []tripDriverDTO{}}
			for _, seg := range t.Drivers {
				dto.DriverHistory = append(dto.DriverHistory, tripDriverDTO{Driver: driver(seg.DriverID),
					StartTime: isoTime(seg.Start), EndTime: isoTime(seg.End)})
			}
			if dto.Driver == nil && len(t.Drivers) > 0 {
				dto.Driver = driver(t.Drivers[0].DriverID)
			}
			out = append(out, dto)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, p)
}
