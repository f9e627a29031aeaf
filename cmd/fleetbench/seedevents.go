package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// seedTypes are the event types the seeded history rotates through.
var seedTypes = []string{"deceleration", "acceleration", "sharpTurnLeft", "sharpRightTurn", "gsensorRegular", "button", "tailgating", "cellPhoneUse"}

// seedEvents stores n events of f's devices, spread evenly over the days
// before end, with the store's event insert in transactions of 50,000.
// Events go to the devices in turn, so every device has a time-ordered history.
func seedEvents(f *fleet, n, days int, end time.Time) error {
	db, err := store.Open(filepath.Join(f.dataDir, "fleetcam.db"), store.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	start := end.Add(-time.Duration(days) * 24 * time.Hour)
	step := end.Sub(start) / time.Duration(n)
	const chunk = 50_000
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		err := db.Update(store.Actor{Source: "cli"}, func(tx *store.Tx) error {
			for i := lo; i < hi; i++ {
				imei := f.imeis[i%len(f.imeis)]
				e := &store.Event{IMEI: imei, OrganizationID: f.orgID, PartnerID: f.partnerID,
					Type: seedTypes[i%len(seedTypes)], Time: start.Add(time.Duration(i) * step),
					Lat: 52.37 + float64(i%1000)/1e4, Lon: 4.89 + float64(i%777)/1e4, Speed: float64(i % 90),
					Severity: 2, DeviceEventID: "S" + strconv.Itoa(i)}
				if _, err := tx.AddEvent(e); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed events %d–%d: %w", lo, hi, err)
		}
	}
	return nil
}
