package cloudapi

import (
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// dataUsagePeriods is how many billing periods GET /devices/{imei}/data-usage lists.
const dataUsagePeriods = 12

// usagePeriodDTO is one billing period's cellular usage, in bytes.
type usagePeriodDTO struct {
	PeriodStart string `json:"periodStart"`
	MobileTx    int64  `json:"mobileTx"`
	MobileRx    int64  `json:"mobileRx"`
	ReceivedAt  string `json:"receivedAt"`
}

// dataUsageDTO is a device's cellular usage: the current period at the top
// level, as in the reference contract, and the last periods in periods.
// fleetcam's devices report their usage as bytes sent and received only, so
// the contract's breakdown by use (live streaming, events, recordings and
// their durations) is 0; usageEventsTodayDay and usageEventsTodayMonth count
// the events of the device's current ownership this UTC day and month.
// receivedAt is absent until the device first reports.
type dataUsageDTO struct {
	IMEI                   string           `json:"imei"`
	MobileTx               int64            `json:"mobileTx"`
	MobileRx               int64            `json:"mobileRx"`
	LiveStreamingUsage     int64            `json:"liveStreamingUsage"`
	EventsUsage            int64            `json:"eventsUsage"`
	LiveStreamUsageMilli   int64            `json:"liveStreamUsageMilli"`
	RecordStreamingUsage   int64            `json:"recordStreamingUsage"`
	RecordStreamUsageMilli int64            `json:"recordStreamUsageMilli"`
	RecordingsUploadUsage  int64            `json:"recordingsUploadUsage"`
	UsageEventsTodayDay    int              `json:"usageEventsTodayDay"`
	UsageEventsTodayMonth  int              `json:"usageEventsTodayMonth"`
	PeriodStart            *string          `json:"periodStart"`
	ReceivedAt             *string          `json:"receivedAt,omitempty"`
	Periods                []usagePeriodDTO `json:"periods"`
}

// eventsSince counts d's events of its current ownership from start to now.
func eventsSince(tx *store.Tx, d *store.Device, start time.Time) (int, error) {
	_, n, err := tx.QueryDeviceEvents(d, store.EventQuery{Start: start, End: tx.Now()}, store.Page{Limit: 1})
	return n, err
}

// deviceDataUsage handles GET /devices/{imei}/data-usage: what the device
// reported with its health status, per billing period, newest first.
func (s *Server) deviceDataUsage(c *gin.Context) error {
	var out dataUsageDTO
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		out, err = deviceUsage(tx, d, dataUsagePeriods)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// deviceUsage is d's usage with its last n billing periods (at least the
// current one, which the top level shows).
func deviceUsage(tx *store.Tx, d *store.Device, n int) (dataUsageDTO, error) {
	periods, err := tx.DataUsage(d.IMEI, max(n, 1))
	if err != nil {
		return dataUsageDTO{}, err
	}
	out := dataUsageDTO{IMEI: d.IMEI, Periods: []usagePeriodDTO{}}
	now := tx.Now().UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if out.UsageEventsTodayDay, err = eventsSince(tx, d, day); err != nil {
		return out, err
	}
	if out.UsageEventsTodayMonth, err = eventsSince(tx, d, day.AddDate(0, 0, 1-day.Day())); err != nil {
		return out, err
	}
	for _, p := range periods[:min(n, len(periods))] {
		out.Periods = append(out.Periods, usagePeriodDTO{PeriodStart: isoTime(p.PeriodStart), MobileTx: p.BytesUp,
			MobileRx: p.BytesDown, ReceivedAt: isoTime(p.ReceivedAt)})
	}
	if len(periods) > 0 {
		cur := periods[0]
		out.MobileTx, out.MobileRx = cur.BytesUp, cur.BytesDown
		out.PeriodStart, out.ReceivedAt = isoTimeOrNull(cur.PeriodStart), isoTimeOrNull(cur.ReceivedAt)
	}
	return out, nil
}
