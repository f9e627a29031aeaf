package cloudapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Billing calls are for partners: the device billing status (its status),
// auxiliary camera billing and the data profile (subscription id). A
// refurbished device's billing status and auxiliary billing cannot change.

// maxBillingIMEIs bounds the IMEIs of one bulk billing call.
const maxBillingIMEIs = 200

// billingQuery is the body of the auxiliary billing calls: IMEIs or one organization.
type billingQuery struct {
	IMEIs          []string `json:"imeis"`
	OrganizationID *int64   `json:"organizationId"`
	BillingStatus  *string  `json:"billingStatus"`
}

// targets resolves the devices a billing body names that the partner owns;
// the IMEIs it does not own or that do not exist are returned apart.
func (s *Server) billingTargets(c *gin.Context, tx *store.Tx, q billingQuery) (mine []*store.Device, missing []string, err error) {
	switch {
	case q.OrganizationID != nil && q.IMEIs != nil:
		return nil, nil, badField("imeis", "and organizationId cannot be given together")
	case q.OrganizationID != nil:
		o, err := s.orgByID(c, tx, *q.OrganizationID)
		if err != nil {
			return nil, nil, err
		}
		devs, _, err := tx.Devices(deviceFilter(principal(c), o.ID), store.Page{})
		for i := range devs {
			mine = append(mine, &devs[i])
		}
		return mine, nil, err
	case len(q.IMEIs) == 0 || len(q.IMEIs) > maxBillingIMEIs:
		return nil, nil, badField("imeis", fmt.Sprintf("must hold from 1 to %d IMEIs (or give organizationId)", maxBillingIMEIs))
	}
	seen := map[string]bool{}
	for i, imei := range q.IMEIs {
		if seen[imei] {
			return nil, nil, badField(fmt.Sprintf("imeis[%d]", i), "repeats "+imei)
		}
		seen[imei] = true
		d, err := s.deviceByIMEI(c, tx, imei)
		if err != nil {
			missing = append(missing, imei)
			continue
		}
		mine = append(mine, d)
	}
	return mine, missing, nil
}

// auxBillingDTO is a device's auxiliary camera billing status.
type auxBillingDTO struct {
	IMEI                      string  `json:"imei"`
	AuxBillingStatus          string  `json:"auxBillingStatus"`
	AuxBillingStatusUpdatedAt *string `json:"auxBillingStatusUpdatedAt"`
}

// auxBillingStatus handles POST /auxiliary-cameras/billing-status (and
// /devices/auxiliary-cameras/billing-status): the status of the IMEIs given,
// leaving out those not found or not the partner's; 404 when none is left.
// The list is in data and, as in the reference contract, in devices.
func (s *Server) auxBillingStatus(c *gin.Context) error {
	var q billingQuery
	if err := decode(c, &q); err != nil {
		return err
	}
	if q.BillingStatus != nil {
		return badField("billingStatus", "is not accepted when reading the status (POST /v2/auxiliary-cameras/billing sets it)")
	}
	out := []auxBillingDTO{}
	err := s.view(c, func(tx *store.Tx) error {
		devs, missing, err := s.billingTargets(c, tx, q)
		if err != nil {
			return err
		}
		if len(devs) == 0 && len(missing) > 0 {
			return notFound("IMEIs " + fmt.Sprint(missing))
		}
		for _, d := range devs {
			b, err := tx.DeviceBilling(d.IMEI)
			if err != nil {
				return err
			}
			out = append(out, auxBillingDTO{IMEI: d.IMEI, AuxBillingStatus: b.AuxBillingStatus,
				AuxBillingStatusUpdatedAt: isoTimeOrNull(b.AuxBillingUpdatedAt)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"data": out, "devices": out, "requestId": requestID(c)})
}

// rejection is an IMEI a bulk billing change left alone, and why.
type rejection struct {
	IMEI      string `json:"imei"`
	Reason    string `json:"reason"`
	ErrorCode int    `json:"errorCode"`
}

// setAuxBilling handles POST /auxiliary-cameras/billing (and
// /devices/auxiliary-cameras/billing): enables or disables auxiliary camera
// billing per device. IMEIs it cannot change are rejected with a code: 404
// not found or not the partner's, 400 no auxiliary camera (enable only),
// 409 refurbished device.
func (s *Server) setAuxBilling(c *gin.Context) error {
	var q billingQuery
	if err := decode(c, &q); err != nil {
		return err
	}
	if q.BillingStatus == nil || *q.BillingStatus != store.AuxBillingEnable && *q.BillingStatus != store.AuxBillingDisable {
		return badField("billingStatus", "must be enable or disable")
	}
	success, rejected, err := s.changeBilling(c, q, auxBillingCodes, func(tx *store.Tx, imei string) error {
		return tx.SetAuxBilling(imei, *q.BillingStatus)
	})
	if err != nil {
		return err
	}
	return ok(c, gin.H{"success": success, "rejected": rejected})
}

// billingCodes are the rejection codes of a bulk billing call: an IMEI not
// found or not the partner's, a device without an auxiliary camera (the
// store's ErrInvalid; 0 where the call has no such rejection) and a
// refurbished device (the store's ErrConflict).
type billingCodes struct {
	notFound, noAuxCamera, refurbished int
}

var (
	// auxBillingCodes are those of the auxiliary billing call: HTTP statuses.
	auxBillingCodes = billingCodes{notFound: http.StatusNotFound, noAuxCamera: http.StatusBadRequest, refurbished: http.StatusConflict}
	// deviceBillingCodes are those of the bulk device calls, numbered by the reference contract.
	deviceBillingCodes = billingCodes{notFound: rejectNotFound, refurbished: rejectRefurbished}
)

// changeBilling applies change to each device q names, in one
// transaction. It returns the IMEIs changed and the rejected ones: first
// those not found or not the partner's, in the order given, then the
// devices whose change the store refused.
func (s *Server) changeBilling(c *gin.Context, q billingQuery, codes billingCodes,
	change func(tx *store.Tx, imei string) error) (changed []string, rejected []rejection, err error) {
	changed, rejected = []string{}, []rejection{}
	err = s.update(c, func(tx *store.Tx) error {
		devs, missing, err := s.billingTargets(c, tx, q)
		if err != nil {
			return err
		}
		for _, imei := range missing {
			rejected = append(rejected, rejection{imei, "the IMEI was not found", codes.notFound})
		}
		for _, d := range devs {
			switch err := change(tx, d.IMEI); {
			case err == nil:
				changed = append(changed, d.IMEI)
			case errors.Is(err, store.ErrInvalid) && codes.noAuxCamera != 0:
				rejected = append(rejected, rejection{d.IMEI, "the auxiliary camera was not found", codes.noAuxCamera})
			case errors.Is(err, store.ErrConflict):
				rejected = append(rejected, rejection{d.IMEI, "the device is refurbished; its billing cannot change", codes.refurbished})
			default:
				return err
			}
		}
		return nil
	})
	return changed, rejected, err
}

// deviceBillingDTO is a device's billing record.
type deviceBillingDTO struct {
	IMEI                      string  `json:"imei"`
	BillingStatus             string  `json:"billingStatus"`
	AuxBillingStatus          string  `json:"auxBillingStatus"`
	AuxBillingStatusUpdatedAt *string `json:"auxBillingStatusUpdatedAt"`
	// DataProfileID is the subscription id; 10 and above means no automatic firmware updates.
	DataProfileID            int64 `json:"dataProfileId"`
	AutomaticFirmwareUpdates bool  `json:"automaticFirmwareUpdates"`
	Refurbished              bool  `json:"refurbished"`
}

func toDeviceBillingDTO(tx *store.Tx, d *store.Device) (deviceBillingDTO, error) {
	b, err := tx.DeviceBilling(d.IMEI)
	if err != nil {
		return deviceBillingDTO{}, err
	}
	sub := d.DataProfileID
	return deviceBillingDTO{IMEI: d.IMEI, BillingStatus: d.Status, AuxBillingStatus: b.AuxBillingStatus,
		AuxBillingStatusUpdatedAt: isoTimeOrNull(b.AuxBillingUpdatedAt), DataProfileID: sub,
		AutomaticFirmwareUpdates: store.AutomaticFirmwareUpdates(sub), Refurbished: b.Refurbished}, nil
}

// deviceBillingStatus handles GET /devices/{imei}/billing-status; data is an object.
func (s *Server) deviceBillingStatus(c *gin.Context) error {
	var out deviceBillingDTO
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		out, err = toDeviceBillingDTO(tx, d)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// settableBillingStatus checks the billingStatus path parameter of the PUT calls.
func settableBillingStatus(c *gin.Context) (string, error) {
	v := c.Param("billingStatus")
	switch v {
	case store.DevicePendingActivation, store.DeviceDeactivated, store.DeviceSuspended:
		return v, nil
	}
	return "", badField("billingStatus", "must be one of pendingActivation, deactivated, suspended")
}

// setDeviceBillingStatus handles PUT /devices/{imei}/billing-status/{billingStatus}.
func (s *Server) setDeviceBillingStatus(c *gin.Context) error {
	status, err := settableBillingStatus(c)
	if err != nil {
		return err
	}
	return s.changeDeviceBilling(c, func(tx *store.Tx, imei string) error { return tx.SetBillingStatus(imei, status) })
}

// changeDeviceBilling applies change to the device the path names and
// answers its billing record after the change.
func (s *Server) changeDeviceBilling(c *gin.Context, change func(tx *store.Tx, imei string) error) error {
	var out deviceBillingDTO
	err := s.update(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		if err := change(tx, d.IMEI); err != nil {
			return err
		}
		if d, err = tx.Device(d.IMEI); err != nil {
			return err
		}
		out, err = toDeviceBillingDTO(tx, d)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// rejectRefurbished is the rejection code of a refurbished device in the
// bulk billing calls (rejectNotFound, 1001, is shared with bulk.go).
const rejectRefurbished = 1002

// imeisBody is the body of the bulk device calls.
type imeisBody struct {
	IMEIs []string `json:"imeis"`
}

// bulkDevices runs change on each IMEI of the body the caller owns and
// reports which were accepted and which rejected.
func (s *Server) bulkDevices(c *gin.Context, change func(tx *store.Tx, imei string) error) error {
	var body imeisBody
	if err := decode(c, &body); err != nil {
		return err
	}
	accepted, rejected, err := s.changeBilling(c, billingQuery{IMEIs: body.IMEIs}, deviceBillingCodes, change)
	if err != nil {
		return err
	}
	return ok(c, gin.H{"accepted": accepted, "rejected": rejected})
}

// setBulkBillingStatus handles PUT /devices/billing-status/{billingStatus}.
func (s *Server) setBulkBillingStatus(c *gin.Context) error {
	status, err := settableBillingStatus(c)
	if err != nil {
		return err
	}
	return s.bulkDevices(c, func(tx *store.Tx, imei string) error { return tx.SetBillingStatus(imei, status) })
}

// organizationBillingStatus handles GET /organizations/{orgId}/devices/billing-status.
func (s *Server) organizationBillingStatus(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	var out []deviceBillingDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		devs, n, err := tx.Devices(deviceFilter(principal(c), o.ID), p)
		if err != nil {
			return err
		}
		total = n
		for i := range devs {
			dto, err := toDeviceBillingDTO(tx, &devs[i])
			if err != nil {
				return err
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

// dataProfileParam reads the dataProfileId path parameter.
func dataProfileParam(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("dataProfileId"), 10, 64)
	if err != nil || id < 1 {
		return 0, badField("dataProfileId", "must be a positive integer")
	}
	return id, nil
}

// setDeviceDataProfile handles PUT /devices/{imei}/data-profile/{dataProfileId}:
// sets the subscription id and audits it with its source.
func (s *Server) setDeviceDataProfile(c *gin.Context) error {
	id, err := dataProfileParam(c)
	if err != nil {
		return err
	}
	return s.changeDeviceBilling(c, func(tx *store.Tx, imei string) error {
		return tx.SetSubscription(imei, id, "PUT /v2/devices/{imei}/data-profile/{dataProfileId}")
	})
}

// setBulkDataProfile handles PUT /devices/data-profile/{dataProfileId}.
func (s *Server) setBulkDataProfile(c *gin.Context) error {
	id, err := dataProfileParam(c)
	if err != nil {
		return err
	}
	return s.bulkDevices(c, func(tx *store.Tx, imei string) error {
		return tx.SetSubscription(imei, id, "PUT /v2/devices/data-profile/{dataProfileId}")
	})
}

// setOrganizationDevicesDataProfile handles PUT
// /organizations/{orgId}/devices/data-profile/{dataProfileId}: every device
// of the partner in the organization.
func (s *Server) setOrganizationDevicesDataProfile(c *gin.Context) error {
	id, err := dataProfileParam(c)
	if err != nil {
		return err
	}
	var n int
	err = s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		devs, _, err := tx.Devices(deviceFilter(principal(c), o.ID), store.Page{})
		if err != nil {
			return err
		}
		for _, d := range devs {
			if err := tx.SetSubscription(d.IMEI, id, "PUT /v2/organizations/{orgId}/devices/data-profile/{dataProfileId}"); err != nil {
				return err
			}
		}
		n = len(devs)
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, gin.H{"updated": n})
}

// defaultDataProfileDTO is an organization's default data profile.
type defaultDataProfileDTO struct {
	DefaultDataProfileID int64 `json:"defaultDataProfileId"`
}

// organizationDataProfile handles GET /organizations/{orgId}/data-profile.
func (s *Server) organizationDataProfile(c *gin.Context) error {
	var out defaultDataProfileDTO
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		out.DefaultDataProfileID = o.DefaultDataProfileID
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// setOrganizationDataProfile handles PUT /organizations/{orgId}/data-profile:
// the data profile of devices added later, and with the organization
// profile enabled of every device now.
func (s *Server) setOrganizationDataProfile(c *gin.Context) error {
	var req struct {
		DefaultDataProfileID *int64 `json:"defaultDataProfileId"`
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.DefaultDataProfileID == nil || *req.DefaultDataProfileID < 1 {
		return badField("defaultDataProfileId", "is required and must be a positive integer")
	}
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		return tx.SetDefaultDataProfile(o.ID, *req.DefaultDataProfileID, "PUT /v2/organizations/{orgId}/data-profile")
	})
	if err != nil {
		return err
	}
	return ok(c, defaultDataProfileDTO{DefaultDataProfileID: *req.DefaultDataProfileID})
}
