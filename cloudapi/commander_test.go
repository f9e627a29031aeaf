package cloudapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// recordingCommander stands in for the broker in API tests: devices are set
// online or offline, every Send, Queue and PushConfig is recorded, and
// replies are scripted per command.
type recordingCommander struct {
	mu      sync.Mutex
	online  map[string]bool
	replies map[string]func(imei string) (json.RawMessage, error)
	sent    []commandCall
	queued  []commandCall
	pushed  []string
	ended   []string // devices disconnected
}

// commandCall is one recorded command.
type commandCall struct {
	IMEI, Name string
	Args       any
}

func newRecordingCommander() *recordingCommander {
	return &recordingCommander{online: map[string]bool{}, replies: map[string]func(string) (json.RawMessage, error){}}
}

func (r *recordingCommander) setOnline(imei string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.online[imei] = on
}

// reply scripts the answer of command name.
func (r *recordingCommander) reply(name string, fn func(imei string) (json.RawMessage, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replies[name] = fn
}

func (r *recordingCommander) Send(ctx context.Context, imei, name string, args any) (json.RawMessage, error) {
	r.mu.Lock()
	online, fn := r.online[imei], r.replies[name]
	if online {
		r.sent = append(r.sent, commandCall{IMEI: imei, Name: name, Args: args})
	}
	r.mu.Unlock()
	if !online {
		return nil, fmt.Errorf("%w: %s", ErrDeviceOffline, imei)
	}
	if fn == nil {
		return json.RawMessage(`{}`), nil
	}
	return fn(imei)
}

// Enqueue records the command once the caller's transaction commits.
func (r *recordingCommander) Enqueue(tx *store.Tx, imei, name string, args any) error {
	tx.OnCommit(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.queued = append(r.queued, commandCall{IMEI: imei, Name: name, Args: args})
	})
	return nil
}

func (r *recordingCommander) PushConfig(imei string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pushed = append(r.pushed, imei)
}

func (r *recordingCommander) Disconnect(imei string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, imei)
}

// disconnected returns the devices disconnected so far.
func (r *recordingCommander) disconnected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ended)
}

func (r *recordingCommander) Online(imei string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.online[imei]
}

// calls returns copies of what was recorded and forgets it.
func (r *recordingCommander) take() (sent, queued []commandCall, pushed []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sent, queued, pushed = r.sent, r.queued, r.pushed
	r.sent, r.queued, r.pushed = nil, nil, nil
	return sent, queued, pushed
}

// deviceWorld is an API with a recording commander, the first partner's
// organization with devices, organization users of each access level, and
// another partner with an organization and a device of its own.
type deviceWorld struct {
	*testEnv
	cmd        *recordingCommander
	orgID      int64
	imeis      []string
	otherOrgID int64
	otherIMEI  string
	editor     string
	viewer     string
	otherToken string
}

// worldIMEI returns the n-th IMEI of a device world, with its check digit.
func worldIMEI(n int) string {
	body := fmt.Sprintf("86000000%06d", n)
	for d := byte('0'); d <= '9'; d++ {
		if s := body + string(d); store.ValidIMEI(s) {
			return s
		}
	}
	panic("no check digit")
}

func newDeviceWorld(t *testing.T, devices int, opts ...envOption) *deviceWorld {
	t.Helper()
	cmd := newRecordingCommander()
	opts = append([]envOption{func(_ *configs.Config, d *Deps) { d.Commander = cmd }}, opts...)
	w := &deviceWorld{testEnv: newEnv(t, opts...), cmd: cmd}
	otherPartner := w.addPartner("Other partner", "other@example.com", "Secret123")
	w.otherToken = w.login("other@example.com", "Secret123")
	err := w.db.Update(store.Actor{Source: "test"}, func(tx *store.Tx) error {
		o, err := tx.CreateOrganization(w.partnerID, "Fleet", []byte("salt"))
		if err != nil {
			return err
		}
		w.orgID = o.ID
		for i := 1; i <= devices; i++ {
			imei := worldIMEI(i)
			if err := tx.AddDevice(&store.Device{IMEI: imei, Name: fmt.Sprintf("Truck %d", i), OrganizationID: o.ID, PartnerID: w.partnerID}); err != nil {
				return err
			}
			w.imeis = append(w.imeis, imei)
		}
		other, err := tx.CreateOrganization(otherPartner, "Other fleet", []byte("salt"))
		if err != nil {
			return err
		}
		w.otherOrgID, w.otherIMEI = other.ID, worldIMEI(9000)
		return tx.AddDevice(&store.Device{IMEI: w.otherIMEI, OrganizationID: other.ID, PartnerID: otherPartner})
	})
	if err != nil {
		t.Fatal(err)
	}
	w.addOrgUser(w.orgID, "editor@example.com", "Secret123", store.AccessEditor)
	w.addOrgUser(w.orgID, "viewer@example.com", "Secret123", store.AccessViewer)
	w.editor = w.login("editor@example.com", "Secret123")
	w.viewer = w.login("viewer@example.com", "Secret123")
	return w
}

// scopedToken mints a scoped token for one device of the organization.
func (w *deviceWorld) scopedToken(imei string, features ...string) string {
	w.t.Helper()
	tok, _, err := w.api.issue(Principal{Kind: kindScoped, OrganizationID: w.orgID, PartnerID: w.partnerID,
		Scope: &Scope{IMEI: imei, OrganizationID: w.orgID, Features: features}}, time.Hour)
	if err != nil {
		w.t.Fatal(err)
	}
	return tok
}

// settings reads a device's stored and effective settings.
func (w *deviceWorld) settings(imei string) (*store.DeviceSettings, *store.Effective) {
	w.t.Helper()
	var ds *store.DeviceSettings
	var e *store.Effective
	err := w.db.View(func(tx *store.Tx) (err error) {
		if ds, err = tx.DeviceSettings(imei); err != nil {
			return err
		}
		e, err = tx.EffectiveSettings(imei)
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return ds, e
}

// setProfile switches the organization profile of the world's organization.
func (w *deviceWorld) setProfile(on bool) {
	w.t.Helper()
	err := w.db.Update(store.Actor{Source: "test"}, func(tx *store.Tx) error {
		o, err := tx.Organization(w.orgID)
		if err != nil {
			return err
		}
		o.IsOrganizationProfileEnabled = on
		return tx.UpdateOrganization(o)
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// auditActions lists the actions of the audit log, oldest first.
func (w *deviceWorld) audit(action string) []store.AuditEntry {
	w.t.Helper()
	entries, _, err := w.db.AuditLog(store.AuditFilter{Action: action}, store.Page{})
	if err != nil {
		w.t.Fatal(err)
	}
	slices.Reverse(entries)
	return entries
}

// strs turns a decoded JSON array into strings.
func strs(v []any) []string {
	out := make([]string, 0, len(v))
	for _, s := range v {
		out = append(out, fmt.Sprint(s))
	}
	return out
}

func idStr(n int64) string { return strconv.FormatInt(n, 10) }
