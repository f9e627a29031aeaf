package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store"
)

// TestEventMailEndToEnd: a recipient of a device's accOn events, set
// through the API, gets an e-mail through the configured SMTP server when
// the simulated dashcam reports one over MQTT, and the queue is empty once
// it went out.
func TestEventMailEndToEnd(t *testing.T) {
	t.Parallel()
	onEveryEngine(t, testEventMailEndToEnd)
}

func testEventMailEndToEnd(t *testing.T, engine envOption) {
	e := startEnv(t, engine, withSMTP(), withDevice("35693810000400", "Truck 14"))
	e.connect(nil)
	e.waitOnline()
	status, out := e.c.call("PUT", "/v2/devices/"+e.imei+"/events/accOn/notification-recipients", e.tok,
		map[string]any{"notificationRecipients": []string{"dispatch@northwind.example"}})
	if status != http.StatusOK {
		t.Fatalf("set recipients: %d %v", status, out)
	}
	if _, err := e.dev.Emit(t.Context(), devicesim.EventSpec{Type: "accOn"}); err != nil {
		t.Fatal(err)
	}
	mail := e.smtp.Await(t, "the event e-mail", patience)
	if strings.Join(mail.To, ",") != "dispatch@northwind.example" ||
		!strings.Contains(mail.Data, "Subject: [fleetcam] accOn on Truck 14 (IMEI "+e.imei+")") ||
		!strings.Contains(mail.Data, "/v2/devices/"+e.imei+"/events/") {
		t.Fatalf("event e-mail to %v:\n%s", mail.To, mail.Data)
	}
	eventually(t, "the event e-mail queue to empty", func() bool {
		var queue []store.EventMail
		err := e.a.db.View(t.Context(), func(tx *store.Tx) (err error) { queue, err = tx.QueuedEventMail(); return err })
		return err == nil && len(queue) == 0
	})
}
