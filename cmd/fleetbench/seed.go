package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/fleetcam/fleetcam/devicesim"
	"github.com/fleetcam/fleetcam/store"
)

// Credentials of the partner user the bench provisions.
const (
	benchEmail    = "bench@fleetcam.local"
	benchPassword = "Bench-Password-1"
	// benchIMEIs is the first IMEI body of the bench fleet.
	benchIMEIs = "35693800000000"
)

// benchTokenSeed derives every device's token (devicesim.LoadToken); the
// store gets their hashes, so devices connect without bootstrapping.
var benchTokenSeed = []byte("fleetbench device token seed, loopback only")

// fleet is what seedFleet provisioned.
type fleet struct {
	st        storage
	partnerID int64
	orgID     int64
	imeis     []string
}

// seeded makes a fresh store for a part on the current engine
// (newStorage) and seeds a fleet of n devices into it. The caller drops it
// with dropStorage when the part is done.
func (b *bench) seeded(ctx context.Context, name string, n int) (*fleet, error) {
	st, err := b.newStorage(ctx, name)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	fl, err := seedFleet(ctx, st, n)
	if err != nil {
		b.dropStorage(ctx, st)
		return nil, err
	}
	fmt.Fprintf(b.log, "  seeded %d devices on %s in %s\n", n, engineTitle(st.engine), time.Since(t0).Round(time.Millisecond))
	return fl, nil
}

// seedFleet creates the store of st with a partner user, one
// organization and n activated devices, each holding its load token, in
// transactions of a few thousand devices.
func seedFleet(ctx context.Context, st storage, n int) (*fleet, error) {
	imeis, err := devicesim.IMEIs(benchIMEIs, n)
	if err != nil {
		return nil, err
	}
	db, err := st.open(ctx, store.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	hash, err := bcrypt.GenerateFromPassword([]byte(benchPassword), 4)
	if err != nil {
		return nil, err
	}
	f := &fleet{st: st, imeis: imeis}
	actor := store.Actor{Source: "cli"}
	err = db.Update(ctx, actor, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Bench partner")
		if err != nil {
			return err
		}
		f.partnerID = p.ID
		if err := tx.CreateUser(&store.User{Email: benchEmail, Name: "Bench", PasswordHash: hash, PartnerID: p.ID,
			AccessLevel: store.AccessEditor}); err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Bench fleet", []byte("bench sso salt"))
		if err != nil {
			return err
		}
		f.orgID = o.ID
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("seed partner: %w", err)
	}
	const chunk = 2500
	for lo := 0; lo < len(imeis); lo += chunk {
		part := imeis[lo:min(lo+chunk, len(imeis))]
		err := db.Update(ctx, actor, func(tx *store.Tx) error {
			for _, imei := range part {
				if err := tx.AddDevice(&store.Device{IMEI: imei, Name: "bench " + imei, OrganizationID: f.orgID,
					PartnerID: f.partnerID, Status: store.DeviceActivated}); err != nil {
					return err
				}
				sum := sha256.Sum256([]byte(devicesim.LoadToken(benchTokenSeed, imei)))
				if err := tx.IssueDeviceToken(imei, sum[:], 0); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("seed devices: %w", err)
		}
	}
	return f, nil
}
