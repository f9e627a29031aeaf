package cloudapi

import (
	"errors"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/fleetcam/fleetcam/store"
)

// The organization and the device a request's path names (orgId, imei)
// are read with the user or OAuth client of its token, in the
// authentication's transaction: on PostgreSQL in the same round trip
// (store.Tx.ReadAlong). A view of the request then takes them as read
// there instead of reading them again (readOrg, readDevice), which spares
// a page of events, a device's record and every other read of an
// organization's or a device's resources one of their round trips. The
// authentication's snapshot is a moment older than the view's; for a
// read, that is as if the request had come that moment earlier. A
// transaction that writes reads them itself, in its own snapshot, as
// every row it changes, and so does every view after it in the request.

// pathRows are the rows of the request's path found by its
// authentication; nil where the path names none or none was found.
type pathRows struct {
	org    *store.Organization
	device *store.Device
}

const pathRowsKey = "fleetcam.pathRows"

// pathReads names the rows of the request's path.
func pathReads(c *gin.Context) store.AlongReads {
	var r store.AlongReads
	if c.Param("orgId") != "" {
		if id, err := pathInt(c, "orgId"); err == nil {
			r.Organizations = []int64{id}
		}
	}
	if imei := c.Param("imei"); imei != "" {
		r.Devices = []string{imei}
	}
	return r
}

// keepPathRows reads in tx the rows r names, and keeps those it finds for
// the request's views. A row that is not there is left for the view to
// find missing.
func keepPathRows(c *gin.Context, tx *store.Tx, r store.AlongReads) error {
	var rows pathRows
	for _, id := range r.Organizations {
		o, err := tx.Organization(id)
		switch {
		case err == nil:
			rows.org = o
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	for _, imei := range r.Devices {
		d, err := tx.Device(imei)
		switch {
		case err == nil:
			rows.device = d
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	if rows.org != nil || rows.device != nil {
		c.Set(pathRowsKey, rows)
	}
	return nil
}

// keptPathRows are the rows keepPathRows kept, for a view's tx of a
// request that has not written since its authentication; none for a
// transaction that writes, or once one ran (store.TrackWrites), whose
// changes the rows would not show.
func keptPathRows(c *gin.Context, tx *store.Tx) pathRows {
	if !tx.ReadOnly() || store.Wrote(c.Request.Context()) {
		return pathRows{}
	}
	rows, _ := c.Value(pathRowsKey).(pathRows)
	return rows
}

// readOrg is organization id as tx reads it, or as the request's
// authentication read it when tx is a view (pathRows): a copy, which the
// caller may change.
func readOrg(c *gin.Context, tx *store.Tx, id int64) (*store.Organization, error) {
	if o := keptPathRows(c, tx).org; o != nil && o.ID == id {
		cp := *o
		cp.PartnerIDs = slices.Clone(o.PartnerIDs)
		cp.InvitedPartnerIDs = slices.Clone(o.InvitedPartnerIDs)
		cp.SSOSalt = slices.Clone(o.SSOSalt)
		return &cp, nil
	}
	return tx.Organization(id)
}

// readDevice is device imei as tx reads it, or as the request's
// authentication read it when tx is a view (pathRows): a copy.
func readDevice(c *gin.Context, tx *store.Tx, imei string) (*store.Device, error) {
	if d := keptPathRows(c, tx).device; d != nil && d.IMEI == imei {
		cp := *d
		return &cp, nil
	}
	return tx.Device(imei)
}
