package cloudapi

import (
	"fmt"
	"strconv"

	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// assignmentRequest is one item of POST and DELETE /drivers/devices.
type assignmentRequest struct {
	DriverThirdPartyID string  `json:"driverThirdPartyId"`
	OrganizationID     *int64  `json:"organizationId"`
	IMEI               string  `json:"imei"`
	StartTime          *string `json:"startTime"`
	EndTime            *string `json:"endTime"`
}

type assignmentsBody struct {
	Data []assignmentRequest `json:"data"`
}

// assignmentDTO is a driver's assignment to a device.
type assignmentDTO struct {
	ID                 int64  `json:"id"`
	OrganizationID     int64  `json:"organizationId"`
	DriverID           string `json:"driverId"`
	DriverThirdPartyID string `json:"driverThirdPartyId"`
	IMEI               string `json:"imei"`
	StartTime          string `json:"startTime"`
	EndTime            string `json:"endTime,omitempty"`
}

// itemOrg resolves the organization of one item of an assignment body: its
// organizationId (required with a partner token), which must agree with
// the organizationId query parameter when both are given.
func (s *Server) itemOrg(c *gin.Context, tx *store.Tx, i int, v *int64) (*store.Organization, error) {
	q, err := queryOrgID(c)
	if err != nil {
		return nil, err
	}
	p := principal(c)
	id := q
	switch {
	case v != nil && q != 0 && *v != q:
		return nil, badField(itemField(i, "organizationId"), fmt.Sprintf("must equal the organizationId query parameter (%d)", q))
	case v != nil:
		id = *v
	case p.IsPartner():
		return nil, badField(itemField(i, "organizationId"), "is required with a partner token")
	case id == 0:
		id = p.OrganizationID
	}
	return s.orgByID(c, tx, id)
}

// assignmentTarget resolves the driver and device of one item.
func (s *Server) assignmentTarget(c *gin.Context, tx *store.Tx, i int, r assignmentRequest) (*store.Organization, *store.Driver, *store.Device, error) {
	if r.DriverThirdPartyID == "" {
		return nil, nil, nil, badField(itemField(i, "driverThirdPartyId"), "is required")
	}
	if r.IMEI == "" {
		return nil, nil, nil, badField(itemField(i, "imei"), "is required")
	}
	o, err := s.itemOrg(c, tx, i, r.OrganizationID)
	if err != nil {
		return nil, nil, nil, err
	}
	d, err := tx.DriverByThirdPartyID(o.ID, r.DriverThirdPartyID)
	if err != nil {
		return nil, nil, nil, notFound(fmt.Sprintf("data[%d]: driver %q", i, r.DriverThirdPartyID))
	}
	dev, err := s.deviceByIMEI(c, tx, r.IMEI)
	if err != nil || dev.OrganizationID != o.ID {
		return nil, nil, nil, notFound(fmt.Sprintf("data[%d]: device %s", i, r.IMEI))
	}
	return o, d, dev, nil
}

func decodeAssignments(c *gin.Context) ([]assignmentRequest, error) {
	var body assignmentsBody
	if err := decode(c, &body); err != nil {
		return nil, err
	}
	if len(body.Data) == 0 || len(body.Data) > maxDriversPerCall {
		return nil, badField("data", fmt.Sprintf("must hold from 1 to %d assignments", maxDriversPerCall))
	}
	return body.Data, nil
}

// assignDrivers handles POST /drivers/devices: each driver is assigned to
// one device from startTime (default now) to endTime (default open).
func (s *Server) assignDrivers(c *gin.Context) error {
	items, err := decodeAssignments(c)
	if err != nil {
		return err
	}
	var out []assignmentDTO
	var imeis []string
	err = s.update(c, func(tx *store.Tx) error {
		for i, r := range items {
			o, d, dev, err := s.assignmentTarget(c, tx, i, r)
			if err != nil {
				return err
			}
			a := &store.DriverAssignment{OrganizationID: o.ID, DriverID: d.ID, IMEI: dev.IMEI}
			if r.StartTime != nil {
				if a.Start, err = parseAPITime(itemField(i, "startTime"), *r.StartTime); err != nil {
					return err
				}
			}
			if r.EndTime != nil {
				if a.End, err = parseAPITime(itemField(i, "endTime"), *r.EndTime); err != nil {
					return err
				}
			}
			if err := tx.AssignDriver(a); err != nil {
				return itemError(i, err)
			}
			out = append(out, assignmentDTO{ID: a.ID, OrganizationID: o.ID, DriverID: strconv.FormatInt(d.ID, 10),
				DriverThirdPartyID: d.ThirdPartyID, IMEI: dev.IMEI, StartTime: isoTime(a.Start), EndTime: isoTime(a.End)})
			imeis = append(imeis, dev.IMEI)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.pushConfig(imeis...)
	return created(c, out)
}

// unassignDrivers handles DELETE /drivers/devices: ends the current and
// future assignments of each driver to each device.
func (s *Server) unassignDrivers(c *gin.Context) error {
	items, err := decodeAssignments(c)
	if err != nil {
		return err
	}
	var imeis []string
	err = s.update(c, func(tx *store.Tx) error {
		for i, r := range items {
			if r.StartTime != nil || r.EndTime != nil {
				return badField(itemField(i, "startTime"), "and endTime are not accepted when removing assignments")
			}
			o, d, dev, err := s.assignmentTarget(c, tx, i, r)
			if err != nil {
				return err
			}
			if err := tx.UnassignDriver(o.ID, d.ID, dev.IMEI); err != nil {
				return itemError(i, err)
			}
			imeis = append(imeis, dev.IMEI)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.pushConfig(imeis...)
	return noContent(c)
}

// checkoutDTO answers a check-out through the API.
type checkoutDTO struct {
	IMEI         string `json:"imei"`
	DriverID     string `json:"driverId"`
	CheckedOutAt string `json:"checkedOutAt"`
	// DeviceNotified is true when the check-out command was queued for the
	// device, with the check-out (false only without a device link).
	DeviceNotified bool `json:"deviceNotified"`
}

// checkoutDriver handles POST /devices/{imei}/driver-checkout: ends the
// driver's session in the cloud and queues the command telling the device
// in the same transaction; it is sent once committed, or when the device
// reconnects.
func (s *Server) checkoutDriver(c *gin.Context) error {
	var out checkoutDTO
	err := s.update(c, func(tx *store.Tx) error {
		dev, err := s.device(c, tx)
		if err != nil {
			return err
		}
		t, err := tx.CheckOutDriver(dev.IMEI)
		if err != nil {
			return err
		}
		if err := tx.RecordDriverEvents(dev, []store.DriverTransition{*t}, store.EventInput{}); err != nil {
			return err
		}
		out = checkoutDTO{IMEI: dev.IMEI, DriverID: strconv.FormatInt(t.DriverID, 10), CheckedOutAt: isoTime(t.Time)}
		if s.commander == nil {
			return nil
		}
		out.DeviceNotified = true
		return s.commander.Enqueue(tx, dev.IMEI, protocol.CmdDriverCheckout, nil)
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
