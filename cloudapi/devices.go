package cloudapi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// DeviceConnection is a device's link to the broker as last seen.
type DeviceConnection struct {
	// Status is online, standby or offline.
	Status   string
	LastSeen time.Time
	// FirmwareVersion is what the device last reported.
	FirmwareVersion string
	// ReportedConfigVersion is the last configuration version the device acknowledged.
	ReportedConfigVersion int64
}

// Connection statuses.
const (
	ConnectionOnline  = "online"
	ConnectionStandby = "standby"
	ConnectionOffline = "offline"
)

// Presence reports device connections; the broker implements it. A device
// that never connected is not present.
type Presence interface {
	// Presence reads in tx, the caller's transaction.
	Presence(tx *store.Tx, imei string) (DeviceConnection, bool)
}

// connectionDTO is the connection member of a device: its link to the cloud
// and whether it runs the configuration the cloud wants.
type connectionDTO struct {
	Status                string `json:"status"`
	LastSeenOnline        string `json:"lastSeenOnline,omitempty"`
	FirmwareVersion       string `json:"firmwareVersion,omitempty"`
	DesiredConfigVersion  int64  `json:"desiredConfigVersion"`
	ReportedConfigVersion int64  `json:"reportedConfigVersion"`
	ConfigPending         bool   `json:"configPending"`
}

// deviceDTO is a device as the API shows it. As in the reference contract,
// status is the connection status (online, standby, offline) with
// lastSeenOnline and firmwareVersion beside it; the inventory lifecycle
// (pendingActivation, activated, deactivated, suspended) is activationStatus.
type deviceDTO struct {
	IMEI           string `json:"imei"`
	Name           string `json:"name"`
	OrganizationID int64  `json:"organizationId"`
	PartnerID      int64  `json:"partnerId"`
	// GroupID is absent for a device in no group.
	GroupID          int64         `json:"groupId,omitempty"`
	Status           string        `json:"status"`
	LastSeenOnline   string        `json:"lastSeenOnline,omitempty"`
	FirmwareVersion  string        `json:"firmwareVersion,omitempty"`
	ActivationStatus string        `json:"activationStatus"`
	DataProfileID    int64         `json:"dataProfileId"`
	ProductType      string        `json:"productType,omitempty"`
	CreatedAt        string        `json:"createdAt"`
	ActivatedAt      string        `json:"activatedAt,omitempty"`
	Connection       connectionDTO `json:"connection"`
	// VehicleType is the one of the event configuration the device runs.
	VehicleType string `json:"vehicleType"`
	// Cameras are the road-facing (1) and in-cabin (2) cameras and the
	// paired auxiliary cameras (50 and above).
	Cameras []deviceCameraDTO `json:"cameras"`
	// DeviceModel is the reference contract's name for ProductType.
	DeviceModel string `json:"deviceModel,omitempty"`
	// IsSemiOnline is whether the device runs in semi-online mode.
	IsSemiOnline bool `json:"isSemiOnline"`
	deviceDetailDTO
}

// deviceDetailDTO is what GET /devices/{imei} adds to a device (the
// reference contract's extendedDevice): how long its live streams last,
// and its last position, absent before its first GPS sample.
type deviceDetailDTO struct {
	LiveVideoTimeoutSeconds int      `json:"liveVideoTimeoutSeconds,omitempty"`
	Lat                     *float64 `json:"lat,omitempty"`
	Lon                     *float64 `json:"lon,omitempty"`
	Alt                     *float64 `json:"alt,omitempty"`
	// Speed is in meters per second.
	Speed    *float64 `json:"speed,omitempty"`
	Accuracy *float64 `json:"accuracy,omitempty"`
	// PositionTime is when the device was there.
	PositionTime string `json:"positionTime,omitempty"`
}

// deviceDetail returns what GET /devices/{imei} adds to d.
func deviceDetail(tx *store.Tx, d *store.Device) (deviceDetailDTO, error) {
	ttl, err := liveVideoTimeout(tx, d)
	if err != nil {
		return deviceDetailDTO{}, err
	}
	out := deviceDetailDTO{LiveVideoTimeoutSeconds: int(ttl / time.Second)}
	p, found, err := tx.LastPosition(d)
	if err != nil || !found {
		return out, err
	}
	speed := p.Speed / 3.6
	out.Lat, out.Lon, out.Alt, out.Speed, out.Accuracy = &p.Lat, &p.Lon, &p.Alt, &speed, &p.Accuracy
	out.PositionTime = isoTime(p.Time)
	return out, nil
}

// deviceCameraDTO is one camera of a device.
type deviceCameraDTO struct {
	CameraID int `json:"cameraId"`
}

// toDeviceDTO renders d with its connection; the desired config version is
// the store's, the rest is what the broker's presence knows.
func (s *Server) toDeviceDTO(tx *store.Tx, d *store.Device) (deviceDTO, error) {
	out := deviceDTO{IMEI: d.IMEI, Name: d.Name, OrganizationID: d.OrganizationID, PartnerID: d.PartnerID,
		GroupID: d.GroupID, ActivationStatus: d.Status, DataProfileID: d.DataProfileID, ProductType: d.ProductType,
		CreatedAt: isoTime(d.CreatedAt), ActivatedAt: isoTime(d.ActivatedAt)}
	ds, err := tx.EffectiveSettings(d.IMEI)
	if err != nil {
		return out, err
	}
	out.VehicleType = ds.Events.VehicleType
	out.DeviceModel, out.IsSemiOnline = d.ProductType, ds.Control.Mode == store.ModeSemiOnline
	aux, err := tx.AuxCameras(d.IMEI)
	if err != nil {
		return out, err
	}
	out.Cameras = []deviceCameraDTO{{CameraID: 1}, {CameraID: 2}}
	for _, a := range aux {
		if a.Paired {
			out.Cameras = append(out.Cameras, deviceCameraDTO{CameraID: a.CameraID})
		}
	}
	out.Connection = connectionDTO{Status: ConnectionOffline, DesiredConfigVersion: ds.Version}
	if s.presence != nil {
		if pc, found := s.presence.Presence(tx, d.IMEI); found {
			out.Connection.Status = pc.Status
			out.Connection.LastSeenOnline = isoTime(pc.LastSeen)
			out.Connection.FirmwareVersion = pc.FirmwareVersion
			out.Connection.ReportedConfigVersion = pc.ReportedConfigVersion
		}
	}
	// A reported version above the desired one was never issued (stored
	// before acknowledgements were checked): the broker sends the desired
	// configuration again, so it is pending.
	out.Connection.ConfigPending = out.Connection.ReportedConfigVersion != ds.Version
	out.Status, out.LastSeenOnline, out.FirmwareVersion = out.Connection.Status, out.Connection.LastSeenOnline, out.Connection.FirmwareVersion
	return out, nil
}

func (s *Server) toDeviceDTOs(tx *store.Tx, devices []store.Device) ([]deviceDTO, error) {
	out := make([]deviceDTO, 0, len(devices))
	for i := range devices {
		d, err := s.toDeviceDTO(tx, &devices[i])
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

type addDeviceRequest struct {
	IMEI    string `json:"imei"`
	Name    string `json:"name"`
	GroupID int64  `json:"groupId"`
}

// addDevice handles POST /organizations/{orgId}/devices. The device belongs
// to the caller's partner; organization users and admin tokens add devices
// of the partner that created the organization. An IMEI already registered
// anywhere gets the same 409, without saying where.
func (s *Server) addDevice(c *gin.Context) error {
	var req addDeviceRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if err := req.validate(""); err != nil {
		return err
	}
	var out deviceDTO
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		d, err := s.placeDevice(c, tx, o, req)
		if err != nil {
			return err
		}
		if out, err = s.toDeviceDTO(tx, d); err != nil {
			return err
		}
		out.deviceDetailDTO, err = deviceDetail(tx, d)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// validate checks an added device and trims its IMEI and name; field
// prefixes the names of the fields in errors ("[3]." for an item of a list).
func (req *addDeviceRequest) validate(field string) error {
	req.IMEI = strings.TrimSpace(req.IMEI)
	switch {
	case req.IMEI == "":
		return badField(field+"imei", "is required")
	case !store.ValidIMEI(req.IMEI):
		return badField(field+"imei", store.RuleIMEI)
	case req.GroupID < -1:
		return badField(field+"groupId", "must be a group id, or -1 for no group")
	}
	name, err := requiredName(field+"name", req.Name)
	req.Name = name
	return err
}

// placeDevice adds the device of a validated req to organization o in tx,
// owned by the caller's partner (a partner user) or else by the partner
// that created o. A group not of o is 404 and an IMEI registered anywhere
// the same 409 for every caller, so it tells nothing of other tenants'
// devices; nothing is written then.
func (s *Server) placeDevice(c *gin.Context, tx *store.Tx, o *store.Organization, req addDeviceRequest) (*store.Device, error) {
	d := &store.Device{IMEI: req.IMEI, Name: req.Name, OrganizationID: o.ID, PartnerID: o.PartnerID, GroupID: max(req.GroupID, 0)}
	if p := principal(c); p.IsPartner() {
		d.PartnerID = p.PartnerID
	}
	if err := checkDeviceGroup(tx, d); err != nil {
		return nil, err
	}
	switch _, err := tx.Device(d.IMEI); {
	case err == nil:
		// One answer for every IMEI already registered, the caller's
		// or not, so it tells nothing of other tenants' devices.
		return nil, conflict("device %s cannot be added to organization %d", d.IMEI, o.ID)
	case !errors.Is(err, store.ErrNotFound):
		// A read that failed (on PostgreSQL, a serialisation conflict
		// that makes the transaction run again) is no absent device.
		return nil, err
	}
	if err := tx.AddDevice(d); err != nil {
		return nil, err
	}
	return d, nil
}

// checkDeviceGroup refuses, as not found, a group of the device that is
// not of the device's organization; 0 is no group.
func checkDeviceGroup(tx *store.Tx, d *store.Device) error {
	if d.GroupID == 0 {
		return nil
	}
	if g, err := tx.Group(d.GroupID); err != nil || g.OrganizationID != d.OrganizationID {
		return notFound(fmt.Sprintf("group %d", d.GroupID))
	}
	return nil
}

// listOrganizationDevices handles GET /organizations/{orgId}/devices with
// the filters groupId, name (part of the name) and imei. A partner sees only
// its own devices in a shared organization; a scoped token only its scope.
func (s *Server) listOrganizationDevices(c *gin.Context) error {
	return s.listDevices(c, func(tx *store.Tx) (store.DeviceFilter, error) {
		o, err := s.org(c, tx)
		if err != nil {
			return store.DeviceFilter{}, err
		}
		return deviceFilter(principal(c), o.ID), nil
	})
}

// listDevices answers a page of the devices the caller's filter (given by
// scope) and the query filters select.
func (s *Server) listDevices(c *gin.Context, scope func(tx *store.Tx) (store.DeviceFilter, error)) error {
	pg, err := s.page(c)
	if err != nil {
		return err
	}
	var out []deviceDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		f, err := scope(tx)
		if err != nil {
			return err
		}
		if f, err = narrowDevices(c, f); err != nil {
			return err
		}
		devices, n, err := tx.Devices(f, pg)
		if err != nil {
			return err
		}
		total = n
		out, err = s.toDeviceDTOs(tx, devices)
		return err
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, pg)
}

// narrowDevices adds the query filters to the caller's device filter; a
// filter that contradicts the caller's scope matches nothing.
func narrowDevices(c *gin.Context, f store.DeviceFilter) (store.DeviceFilter, error) {
	none := map[string]bool{}
	if v := c.Query("imei"); v != "" {
		if f.IMEI != "" && f.IMEI != v {
			f.IMEIs = none
		}
		f.IMEI = v
	}
	if v := c.Query("groupId"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return f, badField("groupId", "must be a group id (a positive integer)")
		}
		if f.GroupID != 0 && f.GroupID != id {
			f.IMEIs = none
		}
		f.GroupID = id
	}
	f.Name = strings.TrimSpace(c.Query("name"))
	return f, nil
}

// listPartnerDevices handles GET /partners/devices and its alias
// GET /partner-devices (partners only): the partner's devices in every
// organization.
func (s *Server) listPartnerDevices(c *gin.Context) error {
	return s.listDevices(c, func(*store.Tx) (store.DeviceFilter, error) {
		return store.DeviceFilter{PartnerID: principal(c).PartnerID}, nil
	})
}

// getDevice handles GET /devices/{imei}.
func (s *Server) getDevice(c *gin.Context) error {
	var out deviceDTO
	err := s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		if out, err = s.toDeviceDTO(tx, d); err != nil {
			return err
		}
		out.deviceDetailDTO, err = deviceDetail(tx, d)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

type updateDeviceRequest struct {
	Name             *string `json:"name"`
	GroupID          *int64  `json:"groupId"`
	ActivationStatus *string `json:"activationStatus"`
}

// statusTransitions lists the statuses each device status may move to. A
// device is activated by hand or when it first connects; it can be suspended
// and resumed, and deactivated from any status and reactivated later.
var statusTransitions = map[string][]string{
	store.DevicePendingActivation: {store.DeviceActivated, store.DeviceDeactivated},
	store.DeviceActivated:         {store.DeviceSuspended, store.DeviceDeactivated},
	store.DeviceSuspended:         {store.DeviceActivated, store.DeviceDeactivated},
	store.DeviceDeactivated:       {store.DeviceActivated},
}

func canMoveTo(from, to string) bool {
	if from == to {
		return true
	}
	for _, s := range statusTransitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// updateDevice handles PATCH /devices/{imei}: rename, move to a group (-1
// or 0: none) and, for the device's partner only, change its status.
func (s *Server) updateDevice(c *gin.Context) error {
	var req updateDeviceRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req == (updateDeviceRequest{}) {
		return badRequest("the request body must name at least one of name, groupId, activationStatus")
	}
	if req.ActivationStatus != nil && !store.ValidDeviceStatus(*req.ActivationStatus) {
		return badField("activationStatus", "must be one of pendingActivation, activated, deactivated, suspended")
	}
	if req.GroupID != nil && *req.GroupID < -1 {
		return badField("groupId", "must be a group id, or -1 for no group")
	}
	p := principal(c)
	var out deviceDTO
	err := s.update(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		if req.Name != nil {
			if d.Name, err = requiredName("name", *req.Name); err != nil {
				return err
			}
		}
		if req.GroupID != nil {
			d.GroupID = max(*req.GroupID, 0)
			if err := checkDeviceGroup(tx, d); err != nil {
				return err
			}
		}
		if req.ActivationStatus != nil && *req.ActivationStatus != d.Status {
			if !p.IsPartner() {
				return forbidden("only the device's partner can change its status")
			}
			if !canMoveTo(d.Status, *req.ActivationStatus) {
				return badField("activationStatus", fmt.Sprintf("cannot change from %s to %s", d.Status, *req.ActivationStatus))
			}
			d.Status = *req.ActivationStatus
			if d.Status == store.DeviceActivated && d.ActivatedAt.IsZero() {
				d.ActivatedAt = tx.Now()
			}
		}
		if err := tx.UpdateDevice(d, "device.update"); err != nil {
			return err
		}
		if out, err = s.toDeviceDTO(tx, d); err != nil {
			return err
		}
		out.deviceDetailDTO, err = deviceDetail(tx, d)
		return err
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// removeDevice handles DELETE /organizations/{orgId}/devices/{imei}. The
// store records the deviceRemoved system message in the same transaction;
// a connected device is disconnected.
func (s *Server) removeDevice(c *gin.Context) error {
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		if d.OrganizationID != o.ID {
			return notFound("device " + d.IMEI)
		}
		return tx.RemoveDevice(d.IMEI)
	})
	if err != nil {
		return err
	}
	// A device out of the inventory may not stay connected: its next
	// connection is refused (docs/device-protocol.md, section 2). Its live
	// streams end, on this node and on the others, which find it gone
	// (endForbiddenLive): their viewers are of the organization it left.
	s.live.EndDevice(c.Param("imei"))
	s.endForbiddenLive(c.Param("imei"))
	if s.commander != nil {
		s.commander.Disconnect(c.Param("imei"))
	}
	return ok(c, gin.H{"imei": c.Param("imei"), "removed": true})
}
