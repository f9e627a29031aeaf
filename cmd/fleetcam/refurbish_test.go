package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

func TestDeviceRefurbishSubcommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const imei = "357660100000017"
	db := storetest.Open(t, storetest.WithPath(filepath.Join(dir, storeFile)))
	err := db.Update(t.Context(), store.Actor{Source: "test"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner("Acme")
		if err != nil {
			return err
		}
		o, err := tx.CreateOrganization(p.ID, "Fleet", nil)
		if err != nil {
			return err
		}
		return tx.AddDevice(&store.Device{IMEI: imei, OrganizationID: o.ID, PartnerID: p.ID})
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	refurbished := func() bool {
		t.Helper()
		db := storetest.Open(t, storetest.WithPath(filepath.Join(dir, storeFile)))
		defer db.Close()
		var b *store.DeviceBilling
		db.View(t.Context(), func(tx *store.Tx) error { b, err = tx.DeviceBilling(imei); return err })
		return b.Refurbished
	}
	if code, out := runCmd(t, "device", "refurbish", "-data", dir, "--imei", imei); code != 0 || !strings.Contains(out, "is refurbished") {
		t.Fatalf("refurbish: %d %s", code, out)
	}
	if !refurbished() {
		t.Fatal("the device is not marked refurbished")
	}
	if code, out := runCmd(t, "device", "refurbish", "-data", dir, "--imei", imei, "--undo"); code != 0 || !strings.Contains(out, "not refurbished") {
		t.Fatalf("undo: %d %s", code, out)
	}
	if refurbished() {
		t.Fatal("the refurbished mark stayed")
	}
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"bad IMEI", []string{"device", "refurbish", "-data", dir, "--imei", "123"}, "--imei"},
		{"unknown device", []string{"device", "refurbish", "-data", dir, "--imei", "357660100000025"}, "not found"},
		{"unknown verb", []string{"device", "scrap"}, "usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, out := runCmd(t, tc.args...); code != 1 || !strings.Contains(out, tc.msg) {
				t.Fatalf("exit %d: %s", code, out)
			}
		})
	}
}
