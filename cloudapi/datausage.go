package cloudapi

import (
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
type dataUsageDTO struct {
	IMEI        string           `json:"imei"`
	MobileTx    int64            `json:"mobileTx"`
	MobileRx    int64            `json:"mobileRx"`
	PeriodStart *string          `json:"periodStart"`
	ReceivedAt  *string          `json:"receivedAt"`
	Periods     []usagePeriodDTO `json:"periods"`
}

// deviceDataUsage handles GET /devices/{imei}/data-usage: what the device
// reported with its health status, per billing period, newest first.
func (s *Server) deviceDataUsage(c *gin.Context) {
	var out dataUsageDTO
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		periods, err := tx.DataUsage(d.IMEI, dataUsagePeriods)
		if err != nil {
			return err
		}
		out = dataUsageDTO{IMEI: d.IMEI, Periods: []usagePeriodDTO{}}
		for _, p := range periods {
			out.Periods = append(out.Periods, usagePeriodDTO{PeriodStart: isoTime(p.PeriodStart), MobileTx: p.BytesUp,
				MobileRx: p.BytesDown, ReceivedAt: isoTime(p.ReceivedAt)})
		}
		if len(periods) > 0 {
			cur := periods[0]
			out.MobileTx, out.MobileRx = cur.BytesUp, cur.BytesDown
			out.PeriodStart, out.ReceivedAt = isoTimeOrNull(cur.PeriodStart), isoTimeOrNull(cur.ReceivedAt)
		}
		return nil
	})
	if err != nil {
		s.fail(c, err)
		return
	}
	ok(c, out)
}
