package cloudapi

import (
	"math"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Data usage of many devices: the report of GET /device-data-usage and
// the usage of POST /devices/bulk-data-usage and GET
// /organizations/{orgId}/devices-data-usage, all from the usage the
// devices report with their health status (datausage.go).

// maxBulkUsageIMEIs bounds the imeis of POST /devices/bulk-data-usage.
const maxBulkUsageIMEIs = 1000

// orgUsagePage is the page of GET /organizations/{orgId}/devices-data-usage:
// 100 devices unless limit says otherwise, at most 200.
const (
	orgUsageDefaultLimit = 100
	orgUsageMaxLimit     = 200
)

// reportDevices is the device selection of the fleet reports
// (device-data-usage, device-health): the devices the caller may see in the
// organization of the organizationId query parameter, or in all of the
// partner's organizations without it, narrowed by the imei and name
// query parameters.
func (s *Server) reportDevices(c *gin.Context, tx *store.Tx) (store.DeviceFilter, error) {
	id, err := queryOrgID(c)
	if err != nil {
		return store.DeviceFilter{}, err
	}
	p := principal(c)
	if id == 0 && !p.IsPartner() {
		id = p.OrganizationID
	}
	if id != 0 {
		if _, err := s.orgByID(c, tx, id); err != nil {
			return store.DeviceFilter{}, err
		}
	}
	f := deviceFilter(p, id)
	if v := c.Query("imei"); v != "" {
		if f.IMEI != "" && f.IMEI != v {
			f.IMEIs = map[string]bool{}
		}
		f.IMEI = v
	}
	f.Name = c.Query("name")
	return f, nil
}

// usageReportDTO is one device of GET /device-data-usage. fleetcam has no
// data usage notifications or thresholds, and its devices report their
// usage as bytes only, so notificaitonEnabled and thresholdSet are false
// and the breakdown by use is 0. billingDate is the start of the current
// billing period, absent until the device first reports.
type usageReportDTO struct {
	IMEI                       string  `json:"imei"`
	Name                       string  `json:"name"`
	FirmwareVersion            string  `json:"firmwareVersion"`
	NotificationEnabled        bool    `json:"notificaitonEnabled"`
	ThresholdSet               bool    `json:"thresholdSet"`
	DataUsageMegabytes         float64 `json:"dataUsageMegabytes"`
	VideoEventsMegabytes       float64 `json:"videoEventsMegabytes"`
	LiveVideoMegabytes         float64 `json:"liveVideoMegabytes"`
	RecordingUploadedMegabytes float64 `json:"recordingUploadedMegabytes"`
	RecordStreamingMegabytes   float64 `json:"recordStreamingMegabytes"`
	BillingDate                string  `json:"billingDate,omitempty"`
}

// megabytes converts bytes to megabytes (10^6), to the kilobyte.
func megabytes(n int64) float64 { return math.Round(float64(n)/1e3) / 1e3 }

// dataUsageReport handles GET /device-data-usage: each device's usage of
// its current billing period, in IMEI order, paginated.
func (s *Server) dataUsageReport(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	var out []usageReportDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		f, err := s.reportDevices(c, tx)
		if err != nil {
			return err
		}
		devices, n, err := tx.Devices(f, p)
		if err != nil {
			return err
		}
		total = n
		for i := range devices {
			d := &devices[i]
			row := usageReportDTO{IMEI: d.IMEI, Name: d.Name}
			if s.presence != nil {
				if pc, found := s.presence.Presence(tx, d.IMEI); found {
					row.FirmwareVersion = pc.FirmwareVersion
				}
			}
			periods, err := tx.DataUsage(d.IMEI, 1)
			if err != nil {
				return err
			}
			if len(periods) > 0 {
				row.DataUsageMegabytes = megabytes(periods[0].BytesUp + periods[0].BytesDown)
				row.BillingDate = periods[0].PeriodStart.UTC().Format("2006-01-02")
			}
			out = append(out, row)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, p)
}

// bulkUsageRequest is the body of POST /devices/bulk-data-usage.
type bulkUsageRequest struct {
	IMEIs []string `json:"imeis"`
}

// bulkDataUsage handles POST /devices/bulk-data-usage: the usage of each
// device named, as GET /devices/{imei}/data-usage gives it with the current
// period in periods. A device the caller cannot see is 404, naming it.
func (s *Server) bulkDataUsage(c *gin.Context) error {
	var req bulkUsageRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	imeis, err := checkIMEIList(req.IMEIs, maxBulkUsageIMEIs)
	if err != nil {
		return err
	}
	out := make([]dataUsageDTO, 0, len(imeis))
	err = s.view(c, func(tx *store.Tx) error {
		for _, imei := range imeis {
			d, err := s.deviceByIMEI(c, tx, imei)
			if err != nil {
				return err
			}
			u, err := deviceUsage(tx, d, 1)
			if err != nil {
				return err
			}
			out = append(out, u)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// organizationDataUsage handles GET /organizations/{orgId}/devices-data-usage:
// the usage of the organization's devices the caller may see, in IMEI
// order, 100 a page unless limit (at most 200) says otherwise.
func (s *Server) organizationDataUsage(c *gin.Context) error {
	q := c.Request.URL.Query()
	p, err := s.pageFrom(c.Query("limit"), c.Query("offset"), q.Has("limit"), q.Has("offset"))
	if err != nil {
		return err
	}
	if !q.Has("limit") {
		p.Limit = orgUsageDefaultLimit
	}
	if p.Limit > orgUsageMaxLimit {
		return badField("limit", "must be an integer from 1 to 200")
	}
	var out []dataUsageDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		devices, n, err := tx.Devices(deviceFilter(principal(c), o.ID), p)
		if err != nil {
			return err
		}
		total = n
		for i := range devices {
			u, err := deviceUsage(tx, &devices[i], 1)
			if err != nil {
				return err
			}
			out = append(out, u)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, p)
}
