package cloudapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
	qrcode "github.com/skip2/go-qrcode"
)

// driverDTO is a driver as the API shows it. The id is a string, as in the
// reference contract; driverCode is the 5-digit check-in PIN.
type driverDTO struct {
	ID                 string `json:"id"`
	OrganizationID     int64  `json:"organizationId"`
	DriverThirdPartyID string `json:"driverThirdPartyId"`
	DrivingLicense     string `json:"drivingLicense,omitempty"`
	FirstName          string `json:"firstName,omitempty"`
	LastName           string `json:"lastName,omitempty"`
	DriverCode         string `json:"driverCode"`
	// QRCode is the text the driver's QR code encodes (GET
	// /drivers/{driverId}/qr-code), the qrCode a dashcam reports when the
	// driver checks in with it.
	QRCode string `json:"qrCode"`
	// IMEI is the device the driver is checked in at, else the one assigned now.
	IMEI      string `json:"imei,omitempty"`
	IsActive  bool   `json:"isActive"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

func toDriverDTO(d *store.Driver, imei string) driverDTO {
	return driverDTO{ID: strconv.FormatInt(d.ID, 10), OrganizationID: d.OrganizationID, DriverThirdPartyID: d.ThirdPartyID,
		DrivingLicense: d.DrivingLicense, FirstName: d.FirstName, LastName: d.LastName, DriverCode: d.Code,
		QRCode: d.QRPayload, IMEI: imei, IsActive: d.IsActive, CreatedAt: isoTime(d.CreatedAt), UpdatedAt: isoTime(d.UpdatedAt)}
}

// driverDevice is where a driver is: checked in, else assigned now.
func driverDevice(tx *store.Tx, checkedIn map[int64]string, id int64) string {
	if imei := checkedIn[id]; imei != "" {
		return imei
	}
	imei, _ := tx.DriverAssignedDevice(id)
	return imei
}

// flexID is an id given as a JSON string ("17") or number (17).
type flexID int64

func (f *flexID) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return fmt.Errorf("must be a positive integer id")
	}
	*f = flexID(v)
	return nil
}

// driverRequest is one item of the data array of POST, PATCH, PUT and DELETE /drivers.
type driverRequest struct {
	ID                 *flexID `json:"id"`
	OrganizationID     *int64  `json:"organizationId"`
	DriverThirdPartyID *string `json:"driverThirdPartyId"`
	DrivingLicense     *string `json:"drivingLicense"`
	FirstName          *string `json:"firstName"`
	LastName           *string `json:"lastName"`
	DriverCode         *string `json:"driverCode"`
	IsActive           *bool   `json:"isActive"`
}

type driversBody struct {
	Data []driverRequest `json:"data"`
}

// maxDriversPerCall bounds the data array of the driver calls.
const maxDriversPerCall = 500

// decodeDrivers reads a driver call's body; the data array must hold 1 to 500 items.
func decodeDrivers(c *gin.Context) ([]driverRequest, error) {
	var body driversBody
	if err := decode(c, &body); err != nil {
		if strings.Contains(err.Error(), "positive integer id") {
			return nil, badField("data[].id", "must be a driver id (GET /drivers)")
		}
		return nil, err
	}
	if len(body.Data) == 0 || len(body.Data) > maxDriversPerCall {
		return nil, badField("data", fmt.Sprintf("must hold from 1 to %d drivers", maxDriversPerCall))
	}
	return body.Data, nil
}

// only refuses members an operation does not take.
func (r *driverRequest) only(i int, allowed ...string) error {
	for name, set := range map[string]bool{"id": r.ID != nil, "driverThirdPartyId": r.DriverThirdPartyID != nil,
		"drivingLicense": r.DrivingLicense != nil, "firstName": r.FirstName != nil, "lastName": r.LastName != nil,
		"driverCode": r.DriverCode != nil, "isActive": r.IsActive != nil} {
		if set && !slices.Contains(allowed, name) {
			return badField(itemField(i, name), "is not accepted by this operation")
		}
	}
	return nil
}

// orgDriver returns driver id of organization o, 404 otherwise.
func orgDriver(tx *store.Tx, o *store.Organization, id int64) (*store.Driver, error) {
	d, err := tx.Driver(id)
	if err != nil || d.OrganizationID != o.ID {
		return nil, notFound(fmt.Sprintf("driver %d", id))
	}
	return d, nil
}

// itemError prefixes a store validation error with the item it concerns.
func itemError(i int, err error) error {
	if ae := statusOf(err); ae.Status == http.StatusBadRequest || ae.Status == http.StatusConflict || ae.Status == http.StatusNotFound {
		return apiErr(ae.Status, ae.Name, "data[%d]: %s", i, ae.Message)
	}
	return err
}

// createDrivers handles POST /drivers: adds drivers to one organization.
func (s *Server) createDrivers(c *gin.Context) error {
	return s.writeDrivers(c, []string{"driverThirdPartyId", "drivingLicense", "firstName", "lastName", "driverCode"},
		func(tx *store.Tx, o *store.Organization, i int, r driverRequest) (*store.Driver, error) {
			if r.DriverThirdPartyID == nil {
				return nil, badField(itemField(i, "driverThirdPartyId"), "is required")
			}
			d := &store.Driver{OrganizationID: o.ID, ThirdPartyID: *r.DriverThirdPartyID, DrivingLicense: deref(r.DrivingLicense),
				FirstName: deref(r.FirstName), LastName: deref(r.LastName), Code: deref(r.DriverCode)}
			if err := tx.CreateDriver(d); err != nil {
				return nil, itemError(i, err)
			}
			return d, nil
		}, func(c *gin.Context, out []driverDTO) error { return created(c, out) })
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// updateDrivers handles PATCH /drivers: partial updates; members left out
// are kept. It answers 204, as the reference contract says.
func (s *Server) updateDrivers(c *gin.Context) error {
	return s.changeDrivers(c, []string{"id", "driverThirdPartyId", "drivingLicense", "firstName", "lastName", "driverCode"},
		func(tx *store.Tx, d *store.Driver, r driverRequest) (*store.Driver, error) {
			return tx.UpdateDriver(d.ID, store.DriverPatch{ThirdPartyID: r.DriverThirdPartyID, FirstName: r.FirstName,
				LastName: r.LastName, DrivingLicense: r.DrivingLicense, Code: r.DriverCode})
		}, func(c *gin.Context, _ []driverDTO) error { return noContent(c) })
}

// activeCounts is the answer of PUT /drivers: the reference contract gives
// the counts as strings ("1") and the requestId inside data as well.
type activeCounts struct {
	ActiveCount   int    `json:"activeCount,string"`
	InactiveCount int    `json:"inactiveCount,string"`
	RequestID     string `json:"requestId"`
}

// setDriversActive handles PUT /drivers: activates or deactivates drivers.
func (s *Server) setDriversActive(c *gin.Context) error {
	return s.changeDrivers(c, []string{"id", "isActive"},
		func(tx *store.Tx, d *store.Driver, r driverRequest) (*store.Driver, error) {
			if r.IsActive == nil {
				return nil, badField("isActive", "is required")
			}
			return tx.UpdateDriver(d.ID, store.DriverPatch{IsActive: r.IsActive})
		}, func(c *gin.Context, out []driverDTO) error {
			n := activeCounts{RequestID: requestID(c)}
			for _, d := range out {
				if d.IsActive {
					n.ActiveCount++
				} else {
					n.InactiveCount++
				}
			}
			return ok(c, n)
		})
}

// deleteDrivers handles DELETE /drivers: removes inactive drivers; 204.
func (s *Server) deleteDrivers(c *gin.Context) error {
	return s.changeDrivers(c, []string{"id"},
		func(tx *store.Tx, d *store.Driver, _ driverRequest) (*store.Driver, error) {
			return d, tx.DeleteDriver(d.ID)
		}, func(c *gin.Context, _ []driverDTO) error { return noContent(c) })
}

// changeDrivers runs fn on every driver a body names by id, in one transaction.
func (s *Server) changeDrivers(c *gin.Context, allowed []string,
	fn func(*store.Tx, *store.Driver, driverRequest) (*store.Driver, error), respond func(*gin.Context, []driverDTO) error) error {
	return s.writeDrivers(c, allowed, func(tx *store.Tx, o *store.Organization, i int, r driverRequest) (*store.Driver, error) {
		if r.ID == nil {
			return nil, badField(itemField(i, "id"), "is required")
		}
		d, err := orgDriver(tx, o, int64(*r.ID))
		if err != nil {
			return nil, itemError(i, err)
		}
		if d, err = fn(tx, d, r); err != nil {
			return nil, itemError(i, err)
		}
		return d, nil
	}, respond)
}

// writeDrivers runs write on every item of a drivers body, in one
// transaction, after checking that the item names only the allowed members
// (and organizationId) and the caller's organization. The organization's
// devices get their configuration again, since it lists the drivers; the
// drivers written are answered with respond.
func (s *Server) writeDrivers(c *gin.Context, allowed []string,
	write func(tx *store.Tx, o *store.Organization, i int, r driverRequest) (*store.Driver, error),
	respond func(*gin.Context, []driverDTO) error) error {
	items, err := decodeDrivers(c)
	if err != nil {
		return err
	}
	var out []driverDTO
	var imeis []string
	err = s.update(c, func(tx *store.Tx) error {
		o, err := s.writeOrg(c, tx)
		if err != nil {
			return err
		}
		for i, r := range items {
			if err := r.only(i, allowed...); err != nil {
				return err
			}
			if err := bodyOrg(c, o, itemField(i, "organizationId"), r.OrganizationID); err != nil {
				return err
			}
			d, err := write(tx, o, i, r)
			if err != nil {
				return err
			}
			out = append(out, toDriverDTO(d, ""))
		}
		imeis, err = tx.OrgIMEIs(o.ID)
		return err
	})
	if err != nil {
		return err
	}
	s.pushConfig(imeis...)
	return respond(c, out)
}

// driverSorts maps the sort keys of GET /drivers to the store's.
var driverSorts = map[string]string{
	"createdAt":      store.DriverByCreatedAt,
	"drivingLicense": store.DriverByDrivingLicense,
	"firstName":      store.DriverByFirstName,
	"lastName":       store.DriverByLastName,
}

// nameRegexp compiles a name filter of GET /drivers: a case-insensitive regular expression.
func nameRegexp(field, v string) (*regexp.Regexp, error) {
	if v == "" {
		return nil, nil
	}
	if len(v) > 100 {
		return nil, badField(field, "must be at most 100 characters")
	}
	re, err := regexp.Compile("(?i)" + v)
	if err != nil {
		return nil, badField(field, "must be a valid regular expression")
	}
	return re, nil
}

// queryOrder reads order=asc|desc (default desc).
func queryOrder(c *gin.Context) (bool, error) {
	order, err := queryEnumOr(c, "order", "desc", "asc", "desc")
	return order == "desc", err
}

// listDrivers handles GET /drivers.
func (s *Server) listDrivers(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	sortBy := c.DefaultQuery("sort", "createdAt")
	key, found := driverSorts[sortBy]
	if !found {
		return badField("sort", "must be one of createdAt, drivingLicense, firstName, lastName")
	}
	desc, err := queryOrder(c)
	if err != nil {
		return err
	}
	first, err := nameRegexp("driverFirstName", c.Query("driverFirstName"))
	if err != nil {
		return err
	}
	last, err := nameRegexp("driverLastName", c.Query("driverLastName"))
	if err != nil {
		return err
	}
	f := store.DriverFilter{ThirdPartyID: c.Query("driverThirdPartyId"), FirstName: first, LastName: last}
	if v := c.Query("driverId"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return badField("driverId", "must be a driver id (a positive integer)")
		}
		f.ID = id
	}
	active, err := queryEnum(c, "driverIsActive", "true", "false")
	if err != nil {
		return err
	}
	if active != "" {
		b := active == "true"
		f.IsActive = &b
	}
	var out []driverDTO
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		orgs, err := s.readOrgs(c, tx)
		if err != nil {
			return err
		}
		f.OrganizationIDs = orgIDs(orgs)
		page, n, err := tx.Drivers(f, store.Sort{Key: key, Desc: desc}, p)
		if err != nil {
			return err
		}
		total = n
		checkedIn, err := tx.CheckedInDrivers()
		if err != nil {
			return err
		}
		for i := range page {
			out = append(out, toDriverDTO(&page[i], driverDevice(tx, checkedIn, page[i].ID)))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return okPage(c, out, total, p)
}

// qrCodeSize is the side of a driver's QR code image, in pixels.
const qrCodeSize = 256

// driverQRCode handles GET /drivers/{driverId}/qr-code: the driver's QR
// code as a PNG, inline as a base64 data URL in data, or as the image
// itself when the caller accepts image/png.
func (s *Server) driverQRCode(c *gin.Context) error {
	id, err := pathInt(c, "driverId")
	if err != nil {
		return err
	}
	var payload string
	err = s.view(c, func(tx *store.Tx) error {
		orgs, err := s.readOrgs(c, tx)
		if err != nil {
			return err
		}
		d, err := tx.Driver(id)
		if err != nil || orgs[d.OrganizationID] == nil {
			return notFound(fmt.Sprintf("driver %d", id))
		}
		payload = d.QRPayload
		return nil
	})
	if err != nil {
		return err
	}
	png, err := qrcode.Encode(payload, qrcode.Medium, qrCodeSize)
	if err != nil {
		return err
	}
	if c.NegotiateFormat(gin.MIMEJSON, "image/png") == "image/png" && strings.Contains(c.GetHeader("Accept"), "image/png") {
		c.Data(http.StatusOK, "image/png", png)
		return nil
	}
	return ok(c, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png))
}
