package cloudapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/cloudapi/alarmmail/smtptest"
	"github.com/fleetcam/fleetcam/cloudapi/eventmail"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// A recipient set through the API is e-mailed an event stored through the
// API's ingest (a virtual event), and the queue is empty afterwards.
func TestEventRecipientGetsEmail(t *testing.T) {
	t.Parallel()
	e := newMediaEnv(t)
	srv := smtptest.Start(t)
	e.do("PUT", devPath(e.dev.IMEI, "/events/virtualEvent/notification-recipients"), e.partnerToken,
		map[string]any{"notificationRecipients": []string{"dispatch@fleet.example"}}).want(http.StatusOK)
	at := evT0.Add(10 * time.Minute)
	r := e.do("POST", devPath(e.dev.IMEI, "/virtual-event"), e.partnerToken,
		map[string]any{"time": isoTime(at), "mediaType": "none"}).want(http.StatusOK)
	id := r.strID("data.eventId")

	m := eventmail.New(eventmail.Options{Store: e.db, SMTP: configs.SMTP{Addr: srv.Addr(), From: "fleetcam@example.com"},
		PublicURL: "https://fleet.example.com"})
	if n, err := m.RunOnce(t.Context()); n != 1 || err != nil {
		t.Fatalf("sent %d: %v", n, err)
	}
	mails := srv.Take()
	if len(mails) != 1 || len(mails[0].To) != 1 || mails[0].To[0] != "dispatch@fleet.example" {
		t.Fatalf("mails %+v", mails)
	}
	for _, want := range []string{"Event type: virtualEvent", "Time:       " + isoTime(at), e.dev.IMEI,
		"https://fleet.example.com/v2/devices/" + e.dev.IMEI + "/events/" + itoa(id)} {
		if !strings.Contains(mails[0].Data, want) {
			t.Errorf("mail lacks %q:\n%s", want, mails[0].Data)
		}
	}
	var queue []store.EventMail
	if err := e.db.View(t.Context(), func(tx *store.Tx) (err error) { queue, err = tx.QueuedEventMail(); return err }); err != nil || len(queue) != 0 {
		t.Fatalf("queue after sending %+v (%v)", queue, err)
	}
}
