package cloudapi

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
)

// fleetCommander records what the API asks of devices and answers Send
// with reply (ErrDeviceOffline when nil).
type fleetCommander struct {
	mu     sync.Mutex
	queued []string // "imei name"
	sent   []string
	args   []json.RawMessage
	pushed []string
	reply  func(imei, name string, args any) (json.RawMessage, error)
}

func (f *fleetCommander) Send(_ context.Context, imei, name string, args any) (json.RawMessage, error) {
	f.mu.Lock()
	f.sent = append(f.sent, imei+" "+name)
	raw, _ := json.Marshal(args)
	f.args = append(f.args, raw)
	reply := f.reply
	f.mu.Unlock()
	if reply == nil {
		return nil, ErrDeviceOffline
	}
	return reply(imei, name, args)
}

// Enqueue records the command once the caller's transaction commits.
func (f *fleetCommander) Enqueue(tx *store.Tx, imei, name string, _ any) error {
	tx.OnCommit(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.queued = append(f.queued, imei+" "+name)
	})
	return nil
}

func (f *fleetCommander) PushConfig(imei string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pushed = append(f.pushed, imei)
}

func (f *fleetCommander) Online(string) bool { return true }

// Disconnect does nothing: every device of the fleet tests stays connected.
func (f *fleetCommander) Disconnect(string) {}

func (f *fleetCommander) snapshot() (queued, sent, pushed []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queued...), append([]string(nil), f.sent...), append([]string(nil), f.pushed...)
}

// fleetEnv is the API with a recording commander, two organizations of the
// first partner, one of a rival partner, and tokens for each role.
type fleetEnv struct {
	*testEnv
	cmd          *fleetCommander
	org, org2    *store.Organization
	rival        int64
	rivalOrg     *store.Organization
	rivalToken   string
	adminToken   string // organization user (editor) of org
	viewerToken  string // organization viewer of org
	org2Token    string // organization user of org2
	devices      []string
	rivalDevices []string
}

func newFleetEnv(t *testing.T, opts ...envOption) *fleetEnv {
	t.Helper()
	cmd := &fleetCommander{}
	opts = append([]envOption{func(_ *configs.Config, d *Deps) { d.Commander = cmd }}, opts...)
	e := &fleetEnv{testEnv: newEnv(t, opts...), cmd: cmd}
	e.rival = e.addPartner("Rival partner", "rival@example.com", "Secret123")
	e.rivalToken = e.login("rival@example.com", "Secret123")
	e.org = e.fleetOrg(e.partnerID, "Fleet one")
	e.org2 = e.fleetOrg(e.partnerID, "Fleet two")
	e.rivalOrg = e.fleetOrg(e.rival, "Rival fleet")
	e.addOrgUser(e.org.ID, "admin@one.example", "Secret123", store.AccessEditor)
	e.addOrgUser(e.org.ID, "viewer@one.example", "Secret123", store.AccessViewer)
	e.addOrgUser(e.org2.ID, "admin@two.example", "Secret123", store.AccessEditor)
	e.adminToken = e.login("admin@one.example", "Secret123")
	e.viewerToken = e.login("viewer@one.example", "Secret123")
	e.org2Token = e.login("admin@two.example", "Secret123")
	for i := 1; i <= 3; i++ {
		e.devices = append(e.devices, e.fleetDevice(i, e.org.ID, e.partnerID))
	}
	e.devices = append(e.devices, e.fleetDevice(4, e.org2.ID, e.partnerID))
	e.rivalDevices = append(e.rivalDevices, e.fleetDevice(9, e.rivalOrg.ID, e.rival))
	return e
}

func (e *fleetEnv) fleetOrg(partnerID int64, name string) *store.Organization {
	e.t.Helper()
	var o *store.Organization
	e.fleetUpdate(func(tx *store.Tx) error {
		var err error
		o, err = tx.CreateOrganization(partnerID, name, []byte("salt"))
		return err
	})
	return o
}

// fleetDevice adds the n-th test device (a valid IMEI) to orgID for partnerID.
func (e *fleetEnv) fleetDevice(n int, orgID, partnerID int64) string {
	e.t.Helper()
	body := fmt.Sprintf("35766010%06d", n)
	sum := 0
	for i := 0; i < 14; i++ {
		d := int(body[i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	imei := body + fmt.Sprint((10-sum%10)%10)
	e.fleetUpdate(func(tx *store.Tx) error {
		return tx.AddDevice(&store.Device{IMEI: imei, Name: fmt.Sprintf("Truck %d", n), OrganizationID: orgID, PartnerID: partnerID})
	})
	return imei
}

func (e *fleetEnv) fleetUpdate(fn func(tx *store.Tx) error) {
	e.t.Helper()
	if err := e.db.Update(store.Actor{Source: "test"}, fn); err != nil {
		e.t.Fatal(err)
	}
}

func (e *fleetEnv) fleetView(fn func(tx *store.Tx) error) {
	e.t.Helper()
	if err := e.db.View(fn); err != nil {
		e.t.Fatal(err)
	}
}

// q appends organizationId to a path.
func q(path string, orgID int64) string {
	sep := "?"
	for _, c := range path {
		if c == '?' {
			sep = "&"
		}
	}
	return fmt.Sprintf("%s%sorganizationId=%d", path, sep, orgID)
}
