package store

import (
	"cmp"
	"slices"
	"time"
)

// Partner operational statistics: counts over a partner's devices (those it
// owns) and organizations (those it may hold devices in), computed from the
// store on request. Trend windows are calendar months and ISO weeks
// (Monday 00:00) in UTC; window 0 is the current one, which ends at the
// start of the next.

// StatsDevices counts devices by status.
type StatsDevices struct {
	Total             int `json:"total"`
	Activated         int `json:"activated"`
	Deactivated       int `json:"deactivated"`
	PendingActivation int `json:"pendingActivation"`
	Suspended         int `json:"suspended"`
}

// StatsWindow is the count of one trend window.
type StatsWindow struct {
	MonthsAgo *int      `json:"monthsAgo,omitempty"`
	WeeksAgo  *int      `json:"weeksAgo,omitempty"`
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
	Count     int       `json:"count"`
}

// StatsTrend is a total with its monthly and weekly windows.
type StatsTrend struct {
	Total          int           `json:"total"`
	PreviousMonths []StatsWindow `json:"previousMonths"`
	PreviousWeeks  []StatsWindow `json:"previousWeeks"`
}

// StatsTrends holds the activation and organization trends.
type StatsTrends struct {
	Activations   StatsTrend `json:"activations"`
	Organizations StatsTrend `json:"organizations"`
}

// StatsOrgCount is a count for one organization.
type StatsOrgCount struct {
	OrganizationID int64  `json:"organizationId"`
	Name           string `json:"name"`
	Count          int    `json:"count"`
}

// StatsRecordingHealth is the number of devices with one recording test result.
type StatsRecordingHealth struct {
	RecordingTestResult string `json:"recordingTestResult"`
	Count               int    `json:"count"`
}

// StatsAlarmType is the number of alarms of one definition.
type StatsAlarmType struct {
	AlarmDefinitionID int64  `json:"alarmDefinitionId"`
	Name              string `json:"name"`
	Count             int    `json:"count"`
}

// StatsAdas is the ADAS calibration summary of one product type.
type StatsAdas struct {
	ProductType          string `json:"productType"`
	TotalDevice          int    `json:"totalDevice"`
	AdasCalibrationCount int    `json:"adasCalibrationCount"`
}

// PartnerStats is the partner operational statistics response.
type PartnerStats struct {
	Devices                             StatsDevices           `json:"devices"`
	Trends                              StatsTrends            `json:"trends"`
	DevicesByOrganization               []StatsOrgCount        `json:"devicesByOrganization"`
	RecordingHealthFailedByOrganization []StatsOrgCount        `json:"recordingHealthFailedByOrganization"`
	RecordingHealthSummary              []StatsRecordingHealth `json:"recordingHealthSummary"`
	AlarmsByOrganization                []StatsOrgCount        `json:"alarmsByOrganization"`
	AlarmsByType                        []StatsAlarmType       `json:"alarmsByType"`
	AdasCalibrationSummary              []StatsAdas            `json:"adasCalibrationSummary"`
}

// Recording test results as the statistics name them.
const (
	RecordingPassed    = "passed"
	RecordingFailed    = "failed"
	RecordingNotTested = "notTested"
)

// AdasProductTypes are the product types the ADAS summary covers.
var AdasProductTypes = []string{"AI-12", "AI-14"}

// PartnerStatistics computes the statistics of partnerID at now with months
// previous months and weeks previous weeks besides the current ones.
func (tx *Tx) PartnerStatistics(partnerID int64, now time.Time, months, weeks int) (*PartnerStats, error) {
	now = now.UTC()
	orgs, _, err := tx.Organizations(OrganizationFilter{PartnerID: partnerID}, Page{})
	if err != nil {
		return nil, err
	}
	devices, _, err := tx.Devices(DeviceFilter{PartnerID: partnerID}, Page{})
	if err != nil {
		return nil, err
	}
	s := &PartnerStats{}
	byOrg := map[int64]*[3]int{} // devices, failed recording, alarms
	for _, o := range orgs {
		byOrg[o.ID] = &[3]int{}
	}
	health := map[string]int{RecordingPassed: 0, RecordingFailed: 0, RecordingNotTested: 0}
	adas := map[string]*StatsAdas{}
	for _, pt := range AdasProductTypes {
		adas[pt] = &StatsAdas{ProductType: pt}
	}
	var activations []time.Time
	for _, d := range devices {
		s.Devices.Total++
		switch d.Status {
		case DeviceActivated:
			s.Devices.Activated++
		case DeviceDeactivated:
			s.Devices.Deactivated++
		case DevicePendingActivation:
			s.Devices.PendingActivation++
		case DeviceSuspended:
			s.Devices.Suspended++
		}
		if !d.ActivatedAt.IsZero() {
			activations = append(activations, d.ActivatedAt)
		}
		h, err := tx.DeviceHealthState(d.IMEI)
		if err != nil {
			return nil, err
		}
		result := h.RecordingTest
		if result != RecordingPassed && result != RecordingFailed {
			result = RecordingNotTested
		}
		health[result]++
		if c := byOrg[d.OrganizationID]; c != nil {
			c[0]++
			if result == RecordingFailed {
				c[1]++
			}
		}
		if a := adas[d.ProductType]; a != nil {
			a.TotalDevice++
			if h.AdasCalibrated {
				a.AdasCalibrationCount++
			}
		}
	}
	alarms, _, err := tx.Alarms(AlarmFilter{PartnerID: partnerID}, Sort{}, Page{})
	if err != nil {
		return nil, err
	}
	byType := map[int64]int{}
	for _, a := range alarms {
		byType[a.AlarmDefinitionID]++
		if c := byOrg[a.OrganizationID]; c != nil {
			c[2]++
		}
	}
	var created []time.Time
	for _, o := range orgs {
		created = append(created, o.CreatedAt)
	}
	s.Trends.Activations = trend(activations, now, months, weeks)
	s.Trends.Organizations = trend(created, now, months, weeks)
	for i, list := range []*[]StatsOrgCount{&s.DevicesByOrganization, &s.RecordingHealthFailedByOrganization, &s.AlarmsByOrganization} {
		*list = []StatsOrgCount{}
		for _, o := range orgs {
			*list = append(*list, StatsOrgCount{OrganizationID: o.ID, Name: o.Name, Count: byOrg[o.ID][i]})
		}
		slices.SortStableFunc(*list, func(a, b StatsOrgCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.OrganizationID, b.OrganizationID))
		})
	}
	for _, r := range []string{RecordingPassed, RecordingFailed, RecordingNotTested} {
		s.RecordingHealthSummary = append(s.RecordingHealthSummary, StatsRecordingHealth{RecordingTestResult: r, Count: health[r]})
	}
	for _, def := range alarmDefinitions {
		s.AlarmsByType = append(s.AlarmsByType, StatsAlarmType{AlarmDefinitionID: def.ID, Name: def.Name, Count: byType[def.ID]})
	}
	for _, pt := range AdasProductTypes {
		s.AdasCalibrationSummary = append(s.AdasCalibrationSummary, *adas[pt])
	}
	return s, nil
}

// trend counts times in the total and in each month and week window.
func trend(times []time.Time, now time.Time, months, weeks int) StatsTrend {
	t := StatsTrend{Total: len(times), PreviousMonths: []StatsWindow{}, PreviousWeeks: []StatsWindow{}}
	count := func(start, end time.Time) int {
		n := 0
		for _, x := range times {
			if !x.Before(start) && x.Before(end) {
				n++
			}
		}
		return n
	}
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i <= months; i++ {
		start, end := monthStart.AddDate(0, -i, 0), monthStart.AddDate(0, 1-i, 0)
		ago := i
		t.PreviousMonths = append(t.PreviousMonths, StatsWindow{MonthsAgo: &ago, StartTime: start, EndTime: end, Count: count(start, end)})
	}
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	weekStart := day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	for i := 0; i <= weeks; i++ {
		start, end := weekStart.AddDate(0, 0, -7*i), weekStart.AddDate(0, 0, 7-7*i)
		ago := i
		t.PreviousWeeks = append(t.PreviousWeeks, StatsWindow{WeeksAgo: &ago, StartTime: start, EndTime: end, Count: count(start, end)})
	}
	return t
}
