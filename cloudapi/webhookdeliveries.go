package cloudapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/webhooks"
	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// The webhook delivery log (recent deliveries with their attempts), manual
// redelivery and the state of each endpoint.

type attemptData struct {
	Time       string `json:"time"`
	StatusCode int    `json:"statusCode,omitempty"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"durationMs"`
}

// deliveryData is one delivery as the API shows it; a guest partner's view
// leaves out the URL (forGuest).
type deliveryData struct {
	ID             int64           `json:"id"`
	WebhookID      string          `json:"webhookId"`
	Type           string          `json:"type"`
	MessageType    string          `json:"messageType,omitempty"`
	URL            string          `json:"url,omitempty"`
	IMEI           string          `json:"imei,omitempty"`
	Status         string          `json:"status"`
	Attempts       int             `json:"attempts"`
	MessageTime    string          `json:"messageTime"`
	CreatedAt      string          `json:"createdAt"`
	NextAttemptAt  string          `json:"nextAttemptAt,omitempty"`
	LastAttemptAt  string          `json:"lastAttemptAt,omitempty"`
	LastStatusCode int             `json:"lastStatusCode,omitempty"`
	LastError      string          `json:"lastError,omitempty"`
	FinishedAt     string          `json:"finishedAt,omitempty"`
	RedeliveryOf   int64           `json:"redeliveryOf,omitempty"`
	AttemptLog     []attemptData   `json:"attemptLog"`
	Body           json.RawMessage `json:"body"`
}

func deliveryOf(d *store.Delivery) deliveryData {
	out := deliveryData{ID: d.ID, WebhookID: d.WebhookID, Type: d.Type, MessageType: d.MessageType, URL: d.URL,
		IMEI: d.IMEI, Status: d.Status, Attempts: d.Attempts, MessageTime: isoTime(d.MessageTime),
		CreatedAt: isoTime(d.CreatedAt), LastAttemptAt: isoTime(d.LastAttemptAt), LastStatusCode: d.LastStatusCode,
		LastError: d.LastError, FinishedAt: isoTime(d.FinishedAt), RedeliveryOf: d.RedeliveryOf,
		AttemptLog: []attemptData{}, Body: d.Body}
	if d.Status == store.DeliveryPending {
		out.NextAttemptAt = isoTime(d.NextAttemptAt)
	}
	for _, a := range d.Log {
		out.AttemptLog = append(out.AttemptLog, attemptData{isoTime(a.Time), a.StatusCode, a.Error, a.DurationMS})
	}
	return out
}

// forGuest leaves out what a delivery tells of the host's endpoint: its URL
// and the errors, which may quote it.
func (d *deliveryData) forGuest() {
	d.URL, d.LastError = "", ""
	for i := range d.AttemptLog {
		d.AttemptLog[i].Error = ""
	}
}

var deliveryStatuses = []string{store.DeliveryPending, store.DeliveryDelivered, store.DeliveryFailed}

// listWebhookDeliveries handles GET /organizations/{orgId}/webhook-deliveries:
// newest first, filtered by status, type, url and imei. A guest partner of a
// shared organization sees only the deliveries of messages about its own
// devices, sent since they joined the organization, without the host's
// URLs.
func (s *Server) listWebhookDeliveries(c *gin.Context) error {
	p, err := s.page(c)
	if err != nil {
		return err
	}
	f := store.DeliveryFilter{URL: c.Query("url"), IMEI: c.Query("imei")}
	if f.Status, err = queryEnum(c, "status", deliveryStatuses...); err != nil {
		return err
	}
	if f.Type, err = queryEnum(c, "type", webhooks.SubscriptionTypes...); err != nil {
		return err
	}
	var items []deliveryData
	var total int
	err = s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		guest := isGuest(principal(c), o)
		if guest {
			if f.URL != "" {
				return forbidden("only the partner that created organization %d can see its webhook URLs, so a guest partner cannot filter by url", o.ID)
			}
			if f.Devices, err = guestDevices(tx, principal(c), o); err != nil {
				return err
			}
		}
		ds, n, err := tx.Deliveries(o.ID, f, p)
		for i := range ds {
			d := deliveryOf(&ds[i])
			if guest {
				d.forGuest()
			}
			items = append(items, d)
		}
		total = n
		return err
	})
	if err != nil {
		return err
	}
	return okPage(c, items, total, p)
}

// guestDevices maps the devices guest p holds in organization o to when
// they joined it.
func guestDevices(tx *store.Tx, p Principal, o *store.Organization) (map[string]time.Time, error) {
	devs, _, err := tx.Devices(deviceFilter(p, o.ID), store.Page{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(devs))
	for _, d := range devs {
		out[d.IMEI] = d.CreatedAt
	}
	return out, nil
}

// redeliverWebhook handles POST
// /organizations/{orgId}/webhook-deliveries/{deliveryId}/redeliver: the
// message is queued again for the same URL, with the same webhook-id.
func (s *Server) redeliverWebhook(c *gin.Context) error {
	var out deliveryData
	err := s.update(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		id, err := pathInt(c, "deliveryId")
		if err != nil {
			return err
		}
		d, err := tx.Redeliver(o.ID, id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound(fmt.Sprintf("delivery %d", id))
		}
		if err != nil {
			return err
		}
		out = deliveryOf(d)
		return nil
	})
	if err != nil {
		return err
	}
	return created(c, out)
}

// endpointData is the delivery state of one URL.
type endpointData struct {
	URL            string `json:"url"`
	Disabled       bool   `json:"disabled"`
	DisabledReason string `json:"disabledReason,omitempty"`
	DisabledAt     string `json:"disabledAt,omitempty"`
	Failing        bool   `json:"failing"`
	BlockedUntil   string `json:"blockedUntil,omitempty"`
	LastSuccessAt  string `json:"lastSuccessAt,omitempty"`
	LastFailureAt  string `json:"lastFailureAt,omitempty"`
	LastError      string `json:"lastError,omitempty"`
	Pending        int    `json:"pending"`
}

// listWebhookEndpoints handles GET /organizations/{orgId}/webhook-endpoints:
// every URL of the settings and subscriptions, and every URL still being
// delivered to, with its state.
func (s *Server) listWebhookEndpoints(c *gin.Context) error {
	out := []endpointData{}
	err := s.view(c, func(tx *store.Tx) error {
		o, err := s.org(c, tx)
		if err != nil {
			return err
		}
		ws, err := tx.WebhookSettings(o.ID)
		if err != nil {
			return err
		}
		urls := ws.URLs()
		subs, err := tx.WebhookSubscriptions(o.ID, "")
		if err != nil {
			return err
		}
		for _, sub := range subs {
			urls = append(urls, sub.URL)
		}
		eps, err := tx.WebhookEndpoints(o.ID)
		if err != nil {
			return err
		}
		for _, e := range eps {
			urls = append(urls, e.URL)
		}
		pending := map[string]int{}
		for _, q := range tx.PendingDeliveriesOf(o.ID) {
			pending[q.URL]++
		}
		slices.Sort(urls)
		for _, u := range slices.Compact(urls) {
			e, err := tx.WebhookEndpoint(o.ID, u)
			if err != nil {
				return err
			}
			out = append(out, endpointData{URL: u, Disabled: e.Disabled, DisabledReason: e.DisabledReason,
				DisabledAt: isoTime(e.DisabledAt), Failing: e.Failures > 0, BlockedUntil: isoTime(e.BlockedUntil),
				LastSuccessAt: isoTime(e.LastSuccessAt), LastFailureAt: isoTime(e.LastFailureAt),
				LastError: e.LastError, Pending: pending[u]})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(c, out)
}
