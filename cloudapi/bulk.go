package cloudapi

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Calls that change many devices at once answer per IMEI: applied now
// (success), accepted and applied when the device reconnects (accepted), or
// rejected with a code and a reason. A device the caller may not see is
// rejected as not found, exactly like one that does not exist.

// rejectNotFound is the rejection code, as the reference contract numbers
// it, of a device that does not exist or is not the caller's.
const rejectNotFound = 1001

// rejectedIMEI is one IMEI a bulk call did not change, and why.
type rejectedIMEI struct {
	IMEI      string `json:"imei"`
	ErrorCode int    `json:"errorCode"`
	Reason    string `json:"reason"`
}

// bulkResult is the per-IMEI answer of a call that reaches many devices.
type bulkResult struct {
	Success  []string       `json:"success"`
	Accepted []string       `json:"accepted"`
	Rejected []rejectedIMEI `json:"rejected"`
}

func newBulkResult() bulkResult {
	return bulkResult{Success: []string{}, Accepted: []string{}, Rejected: []rejectedIMEI{}}
}

func (b *bulkResult) reject(imei string, code int, reason string) {
	b.Rejected = append(b.Rejected, rejectedIMEI{IMEI: imei, ErrorCode: code, Reason: reason})
}

// delivered files imei under success when the device is online (the change
// reaches it now) and under accepted otherwise (it gets it on reconnect).
func (b *bulkResult) delivered(imei string, online bool) {
	if online {
		b.Success = append(b.Success, imei)
	} else {
		b.Accepted = append(b.Accepted, imei)
	}
}

// checkIMEIList validates the imeis member of a bulk call: present, from 1
// to max entries, each a string. Duplicates are dropped, order is kept.
func checkIMEIList(imeis []string, max int) ([]string, error) {
	if len(imeis) == 0 {
		return nil, badField("imeis", "is required and must hold at least one IMEI")
	}
	if len(imeis) > max {
		return nil, badField("imeis", fmt.Sprintf("must hold at most %d IMEIs", max))
	}
	out := make([]string, 0, len(imeis))
	for _, imei := range imeis {
		imei = strings.TrimSpace(imei)
		if !slices.Contains(out, imei) {
			out = append(out, imei)
		}
	}
	return out, nil
}

// visibleDevices splits imeis into the devices the caller may see and
// rejections for the others.
func (s *Server) visibleDevices(c *gin.Context, tx *store.Tx, imeis []string, res *bulkResult) []*store.Device {
	var out []*store.Device
	for _, imei := range imeis {
		if !store.ValidIMEI(imei) {
			res.reject(imei, rejectNotFound, "not a valid IMEI: "+store.IMEIShape)
			continue
		}
		d, err := s.deviceByIMEI(c, tx, imei)
		if err != nil {
			res.reject(imei, rejectNotFound, "device not found")
			continue
		}
		out = append(out, d)
	}
	return out
}

// deviceTarget is how a bulk settings call names its devices: a list of
// IMEIs, or an organization (optionally narrowed to groups, minus some IMEIs).
type deviceTarget struct {
	IMEIs                []string `json:"imeis"`
	OrganizationID       *int64   `json:"organizationId"`
	GroupIDs             []int64  `json:"groupIds"`
	ExcludeSerialNumbers []string `json:"excludeSerialNumbers"`
}

// bulkConfigRequest is the body of a bulk configuration write: the devices
// and the configuration (a deviceConfigDTO or an eventConfigDTO).
type bulkConfigRequest[T any] struct {
	deviceTarget
	Config *T `json:"config"`
}

// decodeBulkConfig decodes the body of a bulk configuration write, whose
// config is required.
func decodeBulkConfig[T any](c *gin.Context) (deviceTarget, *T, error) {
	var req bulkConfigRequest[T]
	if err := decode(c, &req); err != nil {
		return deviceTarget{}, nil, err
	}
	if req.Config == nil {
		return deviceTarget{}, nil, badField("config", "is required")
	}
	return req.deviceTarget, req.Config, nil
}

// maxBulkConfigIMEIs bounds the imeis list of the bulk settings calls.
const maxBulkConfigIMEIs = 1000

// resolve returns the devices a bulk settings call targets, recording
// rejected IMEIs in res. An organization the caller may not see is 404.
func (s *Server) resolveTarget(c *gin.Context, tx *store.Tx, t deviceTarget, res *bulkResult) ([]*store.Device, error) {
	switch {
	case t.OrganizationID != nil && t.IMEIs != nil:
		return nil, badRequest("give either imeis or organizationId, not both")
	case t.OrganizationID == nil && (t.GroupIDs != nil || t.ExcludeSerialNumbers != nil):
		return nil, badField("organizationId", "is required with groupIds and excludeSerialNumbers")
	case t.OrganizationID == nil:
		imeis, err := checkIMEIList(t.IMEIs, maxBulkConfigIMEIs)
		if err != nil {
			return nil, err
		}
		return s.visibleDevices(c, tx, imeis, res), nil
	}
	o, err := s.orgByID(c, tx, *t.OrganizationID)
	if err != nil {
		return nil, err
	}
	for i, g := range t.GroupIDs {
		if g < -1 || g == 0 {
			return nil, badField(fmt.Sprintf("groupIds[%d]", i), "must be a group id, or -1 for devices in no group")
		}
		if g > 0 {
			if grp, err := tx.Group(g); err != nil || grp.OrganizationID != o.ID {
				return nil, notFound(fmt.Sprintf("group %d", g))
			}
		}
	}
	devices, _, err := tx.Devices(deviceFilter(principal(c), o.ID), store.Page{})
	if err != nil {
		return nil, err
	}
	var out []*store.Device
	for i := range devices {
		d := &devices[i]
		group := d.GroupID
		if group == 0 {
			group = -1
		}
		if (len(t.GroupIDs) == 0 || slices.Contains(t.GroupIDs, group)) && !slices.Contains(t.ExcludeSerialNumbers, d.IMEI) {
			out = append(out, d)
		}
	}
	return out, nil
}

// online reports whether the device is connected; without a Commander every
// device reads as offline.
func (s *Server) online(imei string) bool {
	return s.commander != nil && s.commander.Online(imei)
}

// onlineSet snapshots which of imeis are connected.
func (s *Server) onlineSet(imeis []string) map[string]bool {
	out := make(map[string]bool, len(imeis))
	for _, imei := range imeis {
		out[imei] = s.online(imei)
	}
	return out
}

// pushConfig asks the broker to deliver the current desired configuration
// of each device: now when it is online, on reconnect otherwise.
// updatePathDevice runs fn on the device the path names, in one write, and
// once it is committed pushes the device its desired configuration: the
// writes of one device's settings.
func (s *Server) updatePathDevice(c *gin.Context, fn func(tx *store.Tx, d *store.Device) error) error {
	var imei string
	err := s.update(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		imei = d.IMEI
		return fn(tx, d)
	})
	if err == nil {
		s.pushConfig(imei)
	}
	return err
}

// pushConfig asks the broker to deliver the devices their desired
// configurations now (wherever in the cluster they are connected), and
// ends the live streams their new settings forbid (endForbiddenLive). Every
// settings write calls it once committed.
func (s *Server) pushConfig(imeis ...string) {
	s.endForbiddenLive(imeis...)
	if s.commander == nil {
		return
	}
	for _, imei := range imeis {
		s.commander.PushConfig(imei)
	}
}

func imeisOf(devices []*store.Device) []string {
	out := make([]string, len(devices))
	for i, d := range devices {
		out[i] = d.IMEI
	}
	return out
}

// prefixField puts prefix before the field a validation error names, for
// rules checked on a member of a larger body ("config.brightness.value").
func prefixField(err error, prefix string) error {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest {
		return &APIError{Status: ae.Status, Name: ae.Name, Message: prefix + ae.Message}
	}
	return err
}

// bulkWriteResult answers a settings write on many devices.
type bulkWriteResult struct {
	EffectedIMEIs []string `json:"effectedImeis"`
	bulkResult
}

// deviceResolver names the devices a call changes, within its transaction;
// the IMEIs it rejects it files in res.
type deviceResolver func(tx *store.Tx, res *bulkResult) ([]*store.Device, error)

// targetDevices resolves the devices of a bulk settings call.
func (s *Server) targetDevices(c *gin.Context, t deviceTarget) deviceResolver {
	return func(tx *store.Tx, res *bulkResult) ([]*store.Device, error) {
		return s.resolveTarget(c, tx, t, res)
	}
}

// listedDevices resolves a checked list of IMEIs: the devices the caller
// may see, rejections for the others.
func (s *Server) listedDevices(c *gin.Context, imeis []string) deviceResolver {
	return func(tx *store.Tx, res *bulkResult) ([]*store.Device, error) {
		return s.visibleDevices(c, tx, imeis, res), nil
	}
}

// pathDevice resolves the device the path names; one the caller may not see
// fails the call as not found.
func (s *Server) pathDevice(c *gin.Context) deviceResolver {
	return func(tx *store.Tx, _ *bulkResult) ([]*store.Device, error) {
		d, err := s.device(c, tx)
		if err != nil {
			return nil, err
		}
		return []*store.Device{d}, nil
	}
}

// writeEach is the flow of every call that answers per IMEI. In one
// transaction resolve names the devices and write changes each of them;
// then the broker is asked to deliver each device's new configuration, and
// the device is filed under success when reached (given the IMEIs changed)
// says the change reached it now, under accepted otherwise. It returns the
// per-IMEI answer and the IMEIs changed, in the order resolved.
func (s *Server) writeEach(c *gin.Context, resolve deviceResolver, write func(tx *store.Tx, imei string) error,
	reached func(imeis []string) map[string]bool) (bulkResult, []string, error) {
	res := newBulkResult()
	var imeis []string
	err := s.update(c, func(tx *store.Tx) error {
		devices, err := resolve(tx, &res)
		if err != nil {
			return err
		}
		imeis = imeisOf(devices)
		for _, imei := range imeis {
			if err := write(tx, imei); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return res, nil, err
	}
	now := reached(imeis)
	for _, imei := range imeis {
		s.pushConfig(imei)
		res.delivered(imei, now[imei])
	}
	return res, imeis, nil
}

// writeDevices applies a settings write to the devices resolve names and
// answers per IMEI, with the devices changed as effectedImeis; a device
// connected once the write is stored gets it now.
func (s *Server) writeDevices(c *gin.Context, resolve deviceResolver, write func(tx *store.Tx, imei string) error) (bulkWriteResult, error) {
	res, imeis, err := s.writeEach(c, resolve, write, s.onlineSet)
	return bulkWriteResult{EffectedIMEIs: imeis, bulkResult: res}, err
}
