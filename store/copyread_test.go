package store_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
)

// What the copy tests read of a store: its counts, every record of every
// kind, and the answers of the store's reads.

// countsOf counts each kind of db's records.
func countsOf(t *testing.T, db *DB) map[Kind]int64 {
	t.Helper()
	counts := map[Kind]int64{}
	err := db.Engine().(Dumper).Dump(t.Context(), func(d Dump) error {
		for _, k := range Kinds {
			n, err := d.Count(k)
			if err != nil {
				return err
			}
			counts[k] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// dumpRecords reads out every record of db, by kind, each as its JSON with
// empty lists and absent members alike, sorted (the engines order some
// keys differently).
func dumpRecords(t *testing.T, db *DB) map[Kind][]string {
	t.Helper()
	out := map[Kind][]string{}
	err := db.Engine().(Dumper).Dump(t.Context(), func(d Dump) error {
		for _, k := range Kinds {
			for r, err := range d.Records(k) {
				if err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
				out[k] = append(out[k], canonicalJSON(t, r))
			}
			slices.Sort(out[k])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// canonicalJSON is v as JSON without its null, empty and false members, so
// that a list one engine keeps empty and another absent compare equal.
func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	raw, err = json.Marshal(prune(doc))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// prune drops the null, empty and false members of JSON objects, and
// reports whether v itself is such.
func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			if p := prune(m); p == nil {
				delete(x, k)
			} else {
				x[k] = p
			}
		}
		if len(x) == 0 {
			return nil
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
		for i := range x {
			x[i] = prune(x[i])
		}
	case bool:
		if !x {
			return nil
		}
	case string:
		if x == "" {
			return nil
		}
	}
	return v
}

// readStore reads db through the store's API: what the seeded records
// answer to the reads the API, the broker and the dispatcher make, each
// as canonical JSON by the name of the read.
func readStore(t *testing.T, db *DB, s copySeed) map[string]string {
	t.Helper()
	out := map[string]string{}
	// read(what)(v, err) and page(what)(list, total, err) keep what a read answered.
	read := func(what string) func(v any, err error) {
		return func(v any, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			out[what] = canonicalJSON(t, v)
		}
	}
	page := func(what string) func(v any, n int, err error) {
		return func(v any, n int, err error) { read(what)(map[string]any{"page": v, "total": n}, err) }
	}
	page("audit log")(db.AuditLog(t.Context(), AuditFilter{}, Page{}))
	err := db.View(t.Context(), func(tx *Tx) error {
		read("partner")(tx.Partner(s.partner))
		read("other partner")(tx.Partner(s.other))
		read("partner count")(tx.PartnerCount(), nil)
		page("organizations")(tx.Organizations(OrganizationFilter{}, Page{}))
		page("users")(tx.Users(UserFilter{}, Page{}))
		read("invited user")(tx.InvitedUser(s.inviteToken))
		page("groups")(tx.Groups(s.org, Page{}))
		page("devices")(tx.Devices(DeviceFilter{}, Page{}))
		window := EventQuery{Start: s.start.Add(-time.Hour), End: s.end.Add(time.Hour)}
		page("organization events")(tx.OrgEvents(s.org, window, Page{Limit: 10}))
		page("alarms")(tx.Alarms(AlarmFilter{}, Sort{}, Page{}))
		read("alarm")(tx.Alarm(s.alarm))
		read("last alarm id")(tx.LastAlarmID(), nil)
		read("recipients")(tx.AlarmRecipients(nil))
		page("trips")(tx.Trips(TripFilter{}, Page{}))
		page("drivers")(tx.Drivers(DriverFilter{}, Sort{}, Page{}))
		read("driver by QR")(tx.DriverByQR(s.driverQR))
		read("org settings")(tx.OrgSettings(s.org))
		read("webhook settings")(tx.WebhookSettings(s.org))
		read("webhook subscriptions")(tx.WebhookSubscriptions(s.org, ""))
		read("webhook secret")(tx.WebhookSecret(s.org))
		read("oauth clients")(tx.OAuthClients(OAuthClientFilter{}))
		read("webhook endpoints")(tx.WebhookEndpoints(s.org))
		page("deliveries")(tx.Deliveries(s.org, DeliveryFilter{}, Page{}))
		read("pending deliveries")(tx.PendingDeliveries(), nil)
		read("messages")(tx.MessagesAfter(0, 0))
		read("outbox")([]int64{tx.WebhookCursor(), tx.OutboxGeneration()}, nil)
		read("receivers")([]bool{tx.HasWebhookReceivers(s.org, "event"), tx.HasWebhookReceivers(s.org, "gps"),
			tx.HasWebhookReceivers(s.org2, "event")}, nil)
		read("media file")(tx.MediaFile(s.media))
		read("unsettled media")(tx.UnsettledMedia(0))
		read("media trash")(tx.MediaTrash(0), nil)
		for _, d := range []*Device{s.dev, s.dev2, s.moved} {
			dev, err := tx.Device(d.IMEI)
			if err != nil {
				return err
			}
			page(d.IMEI + " events")(tx.QueryDeviceEvents(dev, window, Page{}))
			read(d.IMEI + " gps")(tx.DeviceGPS(dev, s.start.Add(-time.Hour), s.end.Add(time.Hour), 0))
			read(d.IMEI + " settings")(tx.DeviceSettings(d.IMEI))
			read(d.IMEI + " hotspot")(tx.Hotspot(d.IMEI))
			read(d.IMEI + " health")(tx.DeviceHealthState(d.IMEI))
			read(d.IMEI + " aux cameras")(tx.AuxCameras(d.IMEI))
			read(d.IMEI + " billing")(tx.DeviceBilling(d.IMEI))
			read(d.IMEI + " data usage")(tx.DataUsage(d.IMEI, 0))
			read(d.IMEI + " link")(tx.DeviceLink(d.IMEI))
			read(d.IMEI + " credential")(tx.DeviceCredential(d.IMEI))
			read(d.IMEI + " commands")(tx.QueuedCommands(d.IMEI))
			read(d.IMEI + " driver")(tx.CheckedInDriver(d.IMEI))
			read(d.IMEI + " assignments")(tx.DeviceAssignments(d.IMEI))
			read(d.IMEI + " geofences")(tx.Geofences(d.IMEI))
		}
		for _, id := range s.events {
			read(fmt.Sprintf("event %d", id))(tx.Event(id))
		}
		read("event mail")(tx.QueuedEventMail())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
