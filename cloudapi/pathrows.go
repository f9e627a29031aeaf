package cloudapi

import (
	"errors"

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

// pathReads names the rows of the request's path: its organization and
// its device, each when it names one.
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

// authView runs read, the authentication's read of its token's user or
// OAuth client, in a view that reads the rows of the request's path in the
// same round trip, and keeps those it finds for the request's views. A
// row that is not there is left for the view to find missing.
func (s *Server) authView(c *gin.Context, read func(tx *store.Tx) error) error {
	return s.view(c, func(tx *store.Tx) error {
		along := pathReads(c)
		tx.ReadAlong(along)
		if err := read(tx); err != nil {
			return err
		}
		var rows pathRows
		var err error
		if len(along.Organizations) > 0 {
			if rows.org, err = found(tx.Organization(along.Organizations[0])); err != nil {
				return err
			}
		}
		if len(along.Devices) > 0 {
			if rows.device, err = found(tx.Device(along.Devices[0])); err != nil {
				return err
			}
		}
		if rows.org != nil || rows.device != nil {
			c.Set(pathRowsKey, rows)
		}
		return nil
	})
}

// found is a read's row, nil without an error when there is none.
func found[T any](row *T, err error) (*T, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return row, err
}

// keptPathRows are the rows authView kept, for a view's tx of a
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
		return o.Copy(), nil
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
