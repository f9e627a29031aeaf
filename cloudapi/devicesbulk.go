package cloudapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// maxBulkDevices bounds the devices of one bulk add.
const maxBulkDevices = 500

// Reject codes of a bulk add, as the reference contract numbers them.
const (
	rejectGroupNotFound    = 1000
	rejectAlreadyAssigned  = 1001
	reasonGroupNotFound    = "group not found"
	reasonAlreadyAssigned  = "device already assigned"
	rejectDuplicateInBatch = "device named twice in the request"
)

// acceptedDeviceDTO is a device a bulk add added: serialNumber is its IMEI
// as a number and edgeId its ownership number, the id of its stay in the
// organization.
type acceptedDeviceDTO struct {
	SerialNumber int64  `json:"serialNumber"`
	EdgeID       int64  `json:"edgeId"`
	IMEI         string `json:"imei"`
	Name         string `json:"name"`
}

// rejectedDeviceDTO is a device a bulk add left out, and why.
type rejectedDeviceDTO struct {
	IMEI      string `json:"imei"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
	ErrorCode int    `json:"errorCode"`
}

// bulkDevicesDTO is the answer of a bulk add.
type bulkDevicesDTO struct {
	Accepted []acceptedDeviceDTO `json:"accepted"`
	Rejected []rejectedDeviceDTO `json:"rejected"`
}

// addBulkDevices handles POST /organizations/{orgId}/bulk-devices and, for
// partners, PUT /organizations/{orgId}/partner-bulk-devices: each device of
// the list is added as POST /organizations/{orgId}/devices adds one
// (placeDevice). A malformed list is refused whole (400 naming the item);
// otherwise the answer lists each device as accepted or rejected (its group
// is not the organization's, or its IMEI is registered already), and the
// accepted ones are added in one transaction.
func (s *Server) addBulkDevices(c *gin.Context) error {
	var reqs []addDeviceRequest
	if err := decode(c, &reqs); err != nil {
		return err
	}
	switch {
	case len(reqs) == 0:
		return badRequest("the request body must be a non-empty array of devices")
	case len(reqs) > maxBulkDevices:
		return badRequest("the request body may name at most %d devices", maxBulkDevices)
	}
	for i := range reqs {
		if err := reqs[i].validate(fmt.Sprintf("[%d].", i)); err != nil {
			return err
		}
	}
	var out bulkDevicesDTO
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		out = bulkDevicesDTO{Accepted: []acceptedDeviceDTO{}, Rejected: []rejectedDeviceDTO{}}
		seen := map[string]bool{}
		for _, req := range reqs {
			if seen[req.IMEI] {
				out.Rejected = append(out.Rejected, rejectedDeviceDTO{IMEI: req.IMEI, Name: req.Name,
					Reason: rejectDuplicateInBatch, ErrorCode: rejectAlreadyAssigned})
				continue
			}
			seen[req.IMEI] = true
			d, err := s.placeDevice(c, tx, o, req)
			if code, reason := bulkReject(err); code != 0 {
				out.Rejected = append(out.Rejected, rejectedDeviceDTO{IMEI: req.IMEI, Name: req.Name, Reason: reason, ErrorCode: code})
				continue
			}
			if err != nil {
				return err
			}
			serial, _ := strconv.ParseInt(d.IMEI, 10, 64)
			out.Accepted = append(out.Accepted, acceptedDeviceDTO{SerialNumber: serial, EdgeID: d.Ownership, IMEI: d.IMEI, Name: d.Name})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}

// bulkReject is the reject code and reason of a device placeDevice
// refused, or 0 for an error that is not the device's.
func bulkReject(err error) (int, string) {
	var ae *APIError
	if !errors.As(err, &ae) {
		return 0, ""
	}
	switch ae.Status {
	case http.StatusNotFound:
		return rejectGroupNotFound, reasonGroupNotFound
	case http.StatusConflict:
		return rejectAlreadyAssigned, reasonAlreadyAssigned
	}
	return 0, ""
}
