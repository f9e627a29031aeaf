package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
)

// The operator commands apply the API's password rules, with its wording,
// before they touch the data dir.
func TestAdminPasswordRules(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	for _, tc := range []struct{ password, msg string }{
		{"a", "--password must be at least 8 characters long"},
		{"guard-pass-123456", "--password must contain an upper-case letter, a lower-case letter and a digit"},
		{"Aa1" + strings.Repeat("x", 70), "--password must be at most 72 bytes long"},
		{"Passw0rd", "--password is too common"},
		{"qWERTY123", "--password is too common"},
	} {
		code, out := runCmd(t, "partner", "add", "-data", dir, "--create", "--name", "Acme", "--email", "ops@acme.example", "--password", tc.password)
		if code != 1 || !strings.Contains(out, tc.msg) {
			t.Errorf("password %q: exit %d: %s", tc.password, code, out)
		}
		code, out = runCmd(t, "user", "add", "-data", dir, "--email", "x@acme.example", "--partner", "1", "--password", tc.password)
		if code != 1 || !strings.Contains(out, tc.msg) {
			t.Errorf("user add, password %q: exit %d: %s", tc.password, code, out)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused password left a data dir behind: %v", err)
	}
}

// A data dir without a store is a typo until --create says otherwise: the
// commands refuse it and create nothing.
func TestAdminRefusesDataDirWithoutStore(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "typo", "dir")
	for _, args := range [][]string{
		{"partner", "add", "-data", dir, "--name", "Acme", "--email", "ops@acme.example"},
		{"user", "add", "-data", dir, "--email", "ops@acme.example", "--partner", "1"},
		{"device", "refurbish", "-data", dir, "--imei", "357660100000017"},
	} {
		code, out := runCmd(t, args...)
		if code != 1 || !strings.Contains(out, dir+" holds no fleetcam store (fleetcam.db is missing)") || !strings.Contains(out, "--create") {
			t.Errorf("%s: exit %d: %s", args[0], code, out)
		}
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Fatalf("a refused command created %s: %v", dir, err)
	}
	code, out := runCmd(t, "partner", "add", "-data", dir, "--create", "--name", "Acme", "--email", "ops@acme.example")
	if code != 0 || !strings.Contains(out, "created user 1") {
		t.Fatalf("partner add --create: exit %d: %s", code, out)
	}
	// Once the store exists, --create is not needed.
	code, out = runCmd(t, "user", "add", "-data", dir, "--email", "sales@acme.example", "--partner", "1")
	if code != 0 || !strings.Contains(out, "created user 2") {
		t.Fatalf("user add: exit %d: %s", code, out)
	}
}

// -config gives the operator commands the server's configuration: the data
// dir it names and the bcrypt cost passwords are hashed at; -data still
// takes precedence over the file's data dir.
func TestAdminReadsTheConfiguration(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	config := filepath.Join(t.TempDir(), "fleetcam.yaml")
	if err := os.WriteFile(config, []byte("dataDir: "+dir+"\nauth:\n  bcryptCost: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runCmd(t, "partner", "add", "-config", config, "--create", "--name", "Acme", "--email", "ops@acme.example")
	if code != 0 || !strings.Contains(out, "created user 1") {
		t.Fatalf("partner add -config: exit %d: %s", code, out)
	}
	other := filepath.Join(t.TempDir(), "other")
	code, out = runCmd(t, "partner", "add", "-config", config, "-data", other, "--create", "--name", "Beta", "--email", "ops@beta.example")
	if code != 0 || !strings.Contains(out, "created user 1") {
		t.Fatalf("partner add -config -data: exit %d: %s", code, out)
	}
	for path, email := range map[string]string{dir: "ops@acme.example", other: "ops@beta.example"} {
		db, err := boltstore.Open(filepath.Join(path, storeFile), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(t.Context(), func(tx *store.Tx) error {
			u, err := tx.UserByEmail(email)
			if err != nil {
				return err
			}
			if cost, err := bcrypt.Cost(u.PasswordHash); err != nil || cost != 5 {
				t.Errorf("%s's password hashed at cost %d (%v), want the configured 5", email, cost, err)
			}
			return nil
		})
		db.Close()
		if err != nil {
			t.Fatalf("%s in %s: %v", email, path, err)
		}
	}
	if code, out := runCmd(t, "user", "add", "-config", filepath.Join(dir, "missing.yaml"), "--email", "x@acme.example", "--partner", "1"); code != 1 || !strings.Contains(out, "missing.yaml") {
		t.Fatalf("a missing configuration file: exit %d: %s", code, out)
	}
}
