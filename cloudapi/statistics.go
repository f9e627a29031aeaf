package cloudapi

import (
	"fmt"
	"strconv"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Trend window limits of GET /partners/operational-statistics.
const (
	maxStatsMonths = 36
	maxStatsWeeks  = 156
)

type statsWindowDTO struct {
	MonthsAgo *int   `json:"monthsAgo,omitempty"`
	WeeksAgo  *int   `json:"weeksAgo,omitempty"`
	StartTime string `json:"startTime"`
	EndTime   string `json:"endTime"`
	Count     int    `json:"count"`
}

type statsTrendDTO struct {
	Total          int              `json:"total"`
	PreviousMonths []statsWindowDTO `json:"previousMonths"`
	PreviousWeeks  []statsWindowDTO `json:"previousWeeks"`
}

type statsOrgDTO struct {
	OrganizationID int64  `json:"organizationId"`
	Name           string `json:"name"`
	Count          int    `json:"count"`
}

// statisticsDTO is the partner operational statistics response.
type statisticsDTO struct {
	Devices struct {
		Total             int `json:"total"`
		Activated         int `json:"activated"`
		Deactivated       int `json:"deactivated"`
		PendingActivation int `json:"pendingActivation"`
		Suspended         int `json:"suspended"`
	} `json:"devices"`
	Trends struct {
		Activations   statsTrendDTO `json:"activations"`
		Organizations statsTrendDTO `json:"organizations"`
	} `json:"trends"`
	DevicesByOrganization               []statsOrgDTO `json:"devicesByOrganization"`
	RecordingHealthFailedByOrganization []statsOrgDTO `json:"recordingHealthFailedByOrganization"`
	RecordingHealthSummary              []struct {
		RecordingTestResult string `json:"recordingTestResult"`
		Count               int    `json:"count"`
	} `json:"recordingHealthSummary"`
	AlarmsByOrganization []statsOrgDTO `json:"alarmsByOrganization"`
	AlarmsByType         []struct {
		AlarmDefinitionID int64  `json:"alarmDefinitionId"`
		Name              string `json:"name"`
		Count             int    `json:"count"`
	} `json:"alarmsByType"`
	AdasCalibrationSummary []struct {
		ProductType          string `json:"productType"`
		TotalDevice          int    `json:"totalDevice"`
		AdasCalibrationCount int    `json:"adasCalibrationCount"`
	} `json:"adasCalibrationSummary"`
}

func toTrendDTO(t store.StatsTrend) statsTrendDTO {
	out := statsTrendDTO{Total: t.Total, PreviousMonths: []statsWindowDTO{}, PreviousWeeks: []statsWindowDTO{}}
	for _, w := range t.PreviousMonths {
		out.PreviousMonths = append(out.PreviousMonths, statsWindowDTO{MonthsAgo: w.MonthsAgo, StartTime: isoTime(w.StartTime), EndTime: isoTime(w.EndTime), Count: w.Count})
	}
	for _, w := range t.PreviousWeeks {
		out.PreviousWeeks = append(out.PreviousWeeks, statsWindowDTO{WeeksAgo: w.WeeksAgo, StartTime: isoTime(w.StartTime), EndTime: isoTime(w.EndTime), Count: w.Count})
	}
	return out
}

func toOrgCounts(in []store.StatsOrgCount) []statsOrgDTO {
	out := []statsOrgDTO{}
	for _, c := range in {
		out = append(out, statsOrgDTO{OrganizationID: c.OrganizationID, Name: c.Name, Count: c.Count})
	}
	return out
}

func toStatisticsDTO(s *store.PartnerStats) statisticsDTO {
	var out statisticsDTO
	out.Devices.Total, out.Devices.Activated, out.Devices.Deactivated = s.Devices.Total, s.Devices.Activated, s.Devices.Deactivated
	out.Devices.PendingActivation, out.Devices.Suspended = s.Devices.PendingActivation, s.Devices.Suspended
	out.Trends.Activations = toTrendDTO(s.Trends.Activations)
	out.Trends.Organizations = toTrendDTO(s.Trends.Organizations)
	out.DevicesByOrganization = toOrgCounts(s.DevicesByOrganization)
	out.RecordingHealthFailedByOrganization = toOrgCounts(s.RecordingHealthFailedByOrganization)
	out.AlarmsByOrganization = toOrgCounts(s.AlarmsByOrganization)
	for _, r := range s.RecordingHealthSummary {
		out.RecordingHealthSummary = append(out.RecordingHealthSummary, struct {
			RecordingTestResult string `json:"recordingTestResult"`
			Count               int    `json:"count"`
		}{r.RecordingTestResult, r.Count})
	}
	for _, a := range s.AlarmsByType {
		out.AlarmsByType = append(out.AlarmsByType, struct {
			AlarmDefinitionID int64  `json:"alarmDefinitionId"`
			Name              string `json:"name"`
			Count             int    `json:"count"`
		}{a.AlarmDefinitionID, a.Name, a.Count})
	}
	for _, a := range s.AdasCalibrationSummary {
		out.AdasCalibrationSummary = append(out.AdasCalibrationSummary, struct {
			ProductType          string `json:"productType"`
			TotalDevice          int    `json:"totalDevice"`
			AdasCalibrationCount int    `json:"adasCalibrationCount"`
		}{a.ProductType, a.TotalDevice, a.AdasCalibrationCount})
	}
	return out
}

// queryCount reads a non-negative integer query parameter up to max (def when absent).
func queryCount(c *gin.Context, name string, def, max int) (int, error) {
	v, has := c.GetQuery(name)
	if !has {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return 0, badField(name, fmt.Sprintf("must be an integer from 0 to %d", max))
	}
	return n, nil
}

// operationalStatistics handles GET /partners/operational-statistics: the
// partner's devices, organizations, recording health, alarms and ADAS
// calibration, with trends over the current and the previous months and weeks.
func (s *Server) operationalStatistics(c *gin.Context) error {
	months, err := queryCount(c, "months", 1, maxStatsMonths)
	if err != nil {
		return err
	}
	weeks, err := queryCount(c, "weeks", 1, maxStatsWeeks)
	if err != nil {
		return err
	}
	var out statisticsDTO
	err = s.view(c, func(tx *store.Tx) error {
		st, err := tx.PartnerStatistics(principal(c).PartnerID, s.now(), months, weeks)
		if err != nil {
			return err
		}
		out = toStatisticsDTO(st)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
