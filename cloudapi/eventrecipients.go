package cloudapi

import (
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// Event notification recipients: the e-mail addresses told when an event
// of one type happens on one device. They are device settings
// (store/eventrecipients.go): every write is audited with the device's
// settings, a device the caller may not see is 404.

// recipientEnabled is the status of a listed recipient: every recipient
// fleetcam keeps is told (the contract's 0, disabled, is never stored).
const recipientEnabled = 1

// eventRecipientDTO is one recipient of one event type, as the reference
// contract's recipientNotificationObject has it.
type eventRecipientDTO struct {
	Recipient string `json:"recipient"`
	EventType string `json:"eventType"`
	Status    int    `json:"status"`
}

// queryEventType reads the optional eventType query in API syntax; given
// but empty or unknown is a bad request naming eventType.
func queryEventType(c *gin.Context) (string, error) {
	v, given := c.GetQuery("eventType")
	if !given {
		return "", nil
	}
	return store.CheckEventType("eventType", v)
}

// getEventRecipients handles GET /devices/{imei}/notification-recipients:
// the device's recipients, of the eventType query only when given.
func (s *Server) getEventRecipients(c *gin.Context) error {
	eventType, err := queryEventType(c)
	if err != nil {
		return err
	}
	out := []eventRecipientDTO{}
	err = s.view(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		rs, err := tx.EventRecipients(d.IMEI, eventType)
		for _, r := range rs {
			out = append(out, eventRecipientDTO{Recipient: r.Email, EventType: r.EventType, Status: recipientEnabled})
		}
		return err
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"recipients": out, "requestId": requestID(c)})
}

// deleteEventRecipient handles DELETE
// /devices/{imei}/notification-recipients/{email}: the address stops being
// told of the eventType query's events, or of every event type when the
// query is left out. An address that is no such recipient is 404.
func (s *Server) deleteEventRecipient(c *gin.Context) error {
	email, err := checkEmail("email", c.Param("email"))
	if err != nil {
		return err
	}
	eventType, err := queryEventType(c)
	if err != nil {
		return err
	}
	err = s.update(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		return tx.DeleteEventRecipient(d.IMEI, email, eventType)
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}

// recipientsRequest is the body of the PUT calls: the replacing list,
// required ([] removes every recipient of the event type).
type recipientsRequest struct {
	NotificationRecipients *[]string `json:"notificationRecipients"`
}

func (r recipientsRequest) list() ([]string, error) {
	if r.NotificationRecipients == nil {
		return nil, badField("notificationRecipients", "is required: a list of e-mail addresses ([] for none)")
	}
	return *r.NotificationRecipients, nil
}

// putEventRecipients handles PUT
// /devices/{imei}/events/{eventType}/notification-recipients: the list
// replaces the device's recipients of the event type.
func (s *Server) putEventRecipients(c *gin.Context) error {
	eventType, err := store.CheckEventType("eventType", c.Param("eventType"))
	if err != nil {
		return err
	}
	var req recipientsRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	emails, err := req.list()
	if err != nil {
		return err
	}
	err = s.update(c, func(tx *store.Tx) error {
		d, err := s.device(c, tx)
		if err != nil {
			return err
		}
		return tx.SetEventRecipients(d.IMEI, eventType, emails)
	})
	if err != nil {
		return err
	}
	return okBody(c, gin.H{"requestId": requestID(c)})
}

// bulkRecipientsResult answers the bulk write: the devices changed and the
// IMEIs rejected (a device the caller may not see is rejected as not found).
type bulkRecipientsResult struct {
	Success   []string       `json:"success"`
	Rejected  []rejectedIMEI `json:"rejected"`
	RequestID string         `json:"requestId"`
}

// putBulkEventRecipients handles PUT
// /devices/events/{eventType}/notification-recipients: the list replaces
// the recipients of the event type on each device named by imeis, or of an
// organization (narrowed to groupIds when given), the caller's devices only.
func (s *Server) putBulkEventRecipients(c *gin.Context) error {
	eventType, err := store.CheckEventType("eventType", c.Param("eventType"))
	if err != nil {
		return err
	}
	var req struct {
		deviceTarget
		recipientsRequest
	}
	if err := decode(c, &req); err != nil {
		return err
	}
	emails, err := req.list()
	if err != nil {
		return err
	}
	if req.OrganizationID == nil && req.IMEIs == nil && req.GroupIDs == nil {
		return badField("imeis", "is required unless organizationId is given")
	}
	res := newBulkResult()
	var imeis []string
	err = s.update(c, func(tx *store.Tx) error {
		devices, err := s.resolveTarget(c, tx, req.deviceTarget, &res)
		if err != nil {
			return err
		}
		imeis = imeisOf(devices)
		for _, imei := range imeis {
			if err := tx.SetEventRecipients(imei, eventType, emails); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if imeis == nil {
		imeis = []string{}
	}
	return okBody(c, bulkRecipientsResult{Success: imeis, Rejected: res.Rejected, RequestID: requestID(c)})
}
