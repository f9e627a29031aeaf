package cloudapi

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// healthAlarmDTO is one open alarm of a device in the health report.
type healthAlarmDTO struct {
	Code    string `json:"code"`
	Details string `json:"details"`
}

// healthAuxDTO is one paired auxiliary camera in the health report.
type healthAuxDTO struct {
	ID              string `json:"id"`
	LastConnectedAt string `json:"lastConnectedAt,omitempty"`
	AuxSerial       string `json:"auxSerial,omitempty"`
}

// deviceHealthDTO is one device of GET /device-health. lastConnectedAt is
// absent for a device that never connected; lastRecordingHealth and
// lastRecordingUpdatedAt are absent until the device reports a recording
// test.
type deviceHealthDTO struct {
	Name                   string           `json:"name"`
	IMEI                   string           `json:"imei"`
	OrganizationID         int64            `json:"organizationId"`
	PartnerID              int64            `json:"partnerId"`
	BillingStatus          string           `json:"billingStatus"`
	LastConnectedAt        string           `json:"lastConnectedAt,omitempty"`
	LastRecordingHealth    *bool            `json:"lastRecordingHealth,omitempty"`
	LastRecordingUpdatedAt string           `json:"lastRecordingUpdatedAt,omitempty"`
	Alarms                 []healthAlarmDTO `json:"alarms"`
	AuxNum                 int              `json:"auxNum"`
	CalibrationCompleted   bool             `json:"calibrationCompleted"`
	AuxiliaryCameras       []healthAuxDTO   `json:"auxiliaryCameras"`

	lastConnected, recordingUpdated time.Time
}

// healthFilter is the query of the health report.
type healthFilter struct {
	connectedStart, connectedEnd time.Time
	recordingStart, recordingEnd time.Time
	// recordingHealth is "1", "0", "-1" (not tested) or empty.
	recordingHealth string
	billingStatus   string
}

// pairedRange reads the time range of two query parameters that go
// together: one given without the other is a 400 naming the missing one.
func pairedRange(c *gin.Context, startName, endName string) (time.Time, time.Time, error) {
	start, err := optionalQueryTime(c, startName)
	if err != nil {
		return start, start, err
	}
	end, err := optionalQueryTime(c, endName)
	switch {
	case err != nil:
		return start, end, err
	case start.IsZero() != end.IsZero() && start.IsZero():
		return start, end, badField(startName, "is required when "+endName+" is given")
	case start.IsZero() != end.IsZero():
		return start, end, badField(endName, "is required when "+startName+" is given")
	case end.Before(start):
		return start, end, badField(endName, "must not be before "+startName)
	}
	return start, end, nil
}

// readHealthFilter reads the filters of GET /device-health.
func readHealthFilter(c *gin.Context) (healthFilter, error) {
	var f healthFilter
	var err error
	if f.connectedStart, f.connectedEnd, err = pairedRange(c, "lastConnectedAtStart", "lastConnectedAtEnd"); err != nil {
		return f, err
	}
	if f.recordingStart, f.recordingEnd, err = pairedRange(c, "lastRecordingUpdatedAtStart", "lastRecordingUpdatedAtEnd"); err != nil {
		return f, err
	}
	if f.recordingHealth, err = queryEnum(c, "lastRecordingHealth", "1", "0", "-1"); err != nil {
		return f, err
	}
	f.billingStatus, err = queryEnum(c, "billingStatus", store.DevicePendingActivation, store.DeviceActivated,
		store.DeviceDeactivated, store.DeviceSuspended, "billingStatusNotSet")
	return f, err
}

// match reports whether the filter keeps row.
func (f healthFilter) match(row *deviceHealthDTO) bool {
	inRange := func(t, start, end time.Time) bool {
		return start.IsZero() || !t.IsZero() && !t.Before(start) && !t.After(end)
	}
	switch f.recordingHealth {
	case "1":
		if row.LastRecordingHealth == nil || !*row.LastRecordingHealth {
			return false
		}
	case "0":
		if row.LastRecordingHealth == nil || *row.LastRecordingHealth {
			return false
		}
	case "-1":
		if row.LastRecordingHealth != nil {
			return false
		}
	}
	// Every device has a billing status: billingStatusNotSet keeps none.
	return (f.billingStatus == "" || f.billingStatus == row.BillingStatus) &&
		inRange(row.lastConnected, f.connectedStart, f.connectedEnd) &&
		inRange(row.recordingUpdated, f.recordingStart, f.recordingEnd)
}

// healthSorts compares report rows by each sort key of GET /device-health.
var healthSorts = map[string]func(a, b *deviceHealthDTO) int{
	"name":                   func(a, b *deviceHealthDTO) int { return strings.Compare(a.Name, b.Name) },
	"imei":                   func(a, b *deviceHealthDTO) int { return strings.Compare(a.IMEI, b.IMEI) },
	"lastConnectedAt":        func(a, b *deviceHealthDTO) int { return a.lastConnected.Compare(b.lastConnected) },
	"lastRecordingUpdatedAt": func(a, b *deviceHealthDTO) int { return a.recordingUpdated.Compare(b.recordingUpdated) },
	"lastRecordingHealth": func(a, b *deviceHealthDTO) int {
		rank := func(h *bool) int {
			switch {
			case h == nil:
				return -1
			case *h:
				return 1
			}
			return 0
		}
		return cmp.Compare(rank(a.LastRecordingHealth), rank(b.LastRecordingHealth))
	},
}

// deviceHealthReport handles GET /device-health: each device the caller may
// see (of one organization with organizationId) with its connection, last
// recording test, open alarms and auxiliary cameras, filtered, sorted
// (by IMEI unless sort says otherwise; order desc by default) and paginated.
func (s *Server) deviceHealthReport(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	f, err := readHealthFilter(c)
	if err != nil {
		return err
	}
	sortBy, err := queryEnumOr(c, "sort", "imei", "name", "imei", "lastConnectedAt", "lastRecordingHealth", "lastRecordingUpdatedAt")
	if err != nil {
		return err
	}
	desc, err := queryOrder(c)
	if err != nil {
		return err
	}
	var rows []deviceHealthDTO
	err = s.view(c, func(tx *store.Tx) error {
		df, err := s.reportDevices(c, tx)
		if err != nil {
			return err
		}
		devices, _, err := tx.Devices(df, store.Page{})
		if err != nil {
			return err
		}
		for i := range devices {
			row, err := s.deviceHealthRow(tx, &devices[i])
			if err != nil {
				return err
			}
			if f.match(&row) {
				rows = append(rows, row)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(rows, func(a, b deviceHealthDTO) int {
		c := healthSorts[sortBy](&a, &b)
		if c == 0 {
			c = strings.Compare(a.IMEI, b.IMEI)
		}
		if desc {
			return -c
		}
		return c
	})
	page, total := store.Paginate(rows, p)
	return okPage(c, page, total, p)
}

// deviceHealthRow builds d's row of the health report.
func (s *Server) deviceHealthRow(tx *store.Tx, d *store.Device) (deviceHealthDTO, error) {
	row := deviceHealthDTO{Name: d.Name, IMEI: d.IMEI, OrganizationID: d.OrganizationID, PartnerID: d.PartnerID,
		BillingStatus: d.Status, Alarms: []healthAlarmDTO{}, AuxiliaryCameras: []healthAuxDTO{}}
	if s.presence != nil {
		if pc, found := s.presence.Presence(tx, d.IMEI); found {
			row.lastConnected = pc.LastSeen
			row.LastConnectedAt = isoTime(pc.LastSeen)
		}
	}
	h, err := tx.DeviceHealthState(d.IMEI)
	if err != nil {
		return row, err
	}
	row.CalibrationCompleted = h.AdasCalibrated
	if h.RecordingTest != "" {
		passed := h.RecordingTest == "passed"
		row.LastRecordingHealth = &passed
		row.recordingUpdated = h.ReportedAt
		row.LastRecordingUpdatedAt = isoTime(h.ReportedAt)
	}
	open := true
	alarms, _, err := tx.Alarms(store.AlarmFilter{IMEI: d.IMEI, Open: &open}, store.Sort{}, store.Page{})
	if err != nil {
		return row, err
	}
	for _, a := range alarms {
		if a.OrganizationID != d.OrganizationID {
			continue // raised while the device was in another organization
		}
		def, _ := store.AlarmDefinitionByID(a.AlarmDefinitionID)
		details := def.Name
		if a.Details != "" {
			details += ": " + a.Details
		}
		row.Alarms = append(row.Alarms, healthAlarmDTO{Code: strconv.FormatInt(a.AlarmDefinitionID, 10), Details: details})
	}
	aux, err := tx.AuxCameras(d.IMEI)
	if err != nil {
		return row, err
	}
	for _, a := range aux {
		if !a.Paired {
			continue
		}
		row.AuxNum++
		cam := healthAuxDTO{ID: strconv.Itoa(a.CameraID), AuxSerial: a.SerialNumber}
		if a.Connected {
			cam.LastConnectedAt = isoTime(a.ChangedAt)
		}
		row.AuxiliaryCameras = append(row.AuxiliaryCameras, cam)
	}
	return row, nil
}
