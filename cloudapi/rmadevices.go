package cloudapi

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// RMA devices: devices that came back through a return and were
// refurbished (`fleetcam device refurbish`, after which a partner cannot
// change their billing status). The report lists the caller's such devices
// with when they were marked.

// rmaDeviceDTO is one device of GET /devices/rma-devices.
type rmaDeviceDTO struct {
	IMEI             string `json:"imei"`
	DeviceName       string `json:"deviceName"`
	OrganizationID   int64  `json:"organizationId"`
	OrganizationName string `json:"organizationName"`
	// RMAUpdatedAt is left out for a device marked before the time was kept.
	RMAUpdatedAt string `json:"rmaUpdatedAt,omitempty"`

	at time.Time
}

// rmaSorts compare two rows by each sort of the report.
var rmaSorts = map[string]func(a, b *rmaDeviceDTO) int{
	"imei":             func(a, b *rmaDeviceDTO) int { return strings.Compare(a.IMEI, b.IMEI) },
	"deviceName":       func(a, b *rmaDeviceDTO) int { return strings.Compare(a.DeviceName, b.DeviceName) },
	"organizationName": func(a, b *rmaDeviceDTO) int { return strings.Compare(a.OrganizationName, b.OrganizationName) },
	"rmaUpdatedAt":     func(a, b *rmaDeviceDTO) int { return a.at.Compare(b.at) },
}

// rmaDevices handles GET /devices/rma-devices: the refurbished devices the
// caller may see (a partner's, or an organization user's organization's),
// filtered by imei, deviceName and organizationName (parts, ignoring case)
// and by when they were marked (rmaUpdatedAtStart and rmaUpdatedAtEnd
// together), sorted by sort (rmaUpdatedAt by default) in order (desc by
// default), paginated.
func (s *Server) rmaDevices(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	from, to, err := pairedRange(c, "rmaUpdatedAtStart", "rmaUpdatedAtEnd")
	if err != nil {
		return err
	}
	sortBy, err := queryEnumOr(c, "sort", "rmaUpdatedAt", "organizationName", "imei", "rmaUpdatedAt", "deviceName")
	if err != nil {
		return err
	}
	desc, err := queryOrder(c)
	if err != nil {
		return err
	}
	orgName := c.Query("organizationName")
	var rows []rmaDeviceDTO
	err = s.view(c, func(tx *store.Tx) error {
		pr := principal(c)
		f := deviceFilter(pr, 0)
		if !pr.IsPartner() {
			f = deviceFilter(pr, pr.OrganizationID)
		}
		f.Name = c.Query("deviceName")
		devices, _, err := tx.Devices(f, store.Page{})
		if err != nil {
			return err
		}
		orgs := map[int64]*store.Organization{}
		for i := range devices {
			d := &devices[i]
			if v := c.Query("imei"); v != "" && !strings.Contains(d.IMEI, v) {
				continue
			}
			b, err := tx.BillingOf(d)
			if err != nil {
				return err
			}
			if !b.Refurbished || (!from.IsZero() && (b.RefurbishedAt.Before(from) || b.RefurbishedAt.After(to))) {
				continue
			}
			o := orgs[d.OrganizationID]
			if o == nil {
				if o, err = tx.Organization(d.OrganizationID); err != nil {
					return err
				}
				orgs[d.OrganizationID] = o
			}
			if orgName != "" && !store.ContainsFold(o.Name, orgName) {
				continue
			}
			rows = append(rows, rmaDeviceDTO{IMEI: d.IMEI, DeviceName: d.Name, OrganizationID: o.ID,
				OrganizationName: o.Name, RMAUpdatedAt: isoTime(b.RefurbishedAt), at: b.RefurbishedAt})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(rows, func(a, b rmaDeviceDTO) int {
		r := cmp.Or(rmaSorts[sortBy](&a, &b), strings.Compare(a.IMEI, b.IMEI))
		if desc {
			return -r
		}
		return r
	})
	page, total := store.Paginate(rows, p)
	return okPage(c, page, total, p)
}
