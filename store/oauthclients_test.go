package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
)

const (
	secretA = "first-client-secret-0123456789abcdefghij"
	secretB = "second-client-secret-0123456789abcdefghij"
)

// TestOAuthClients creates, lists, disables, rotates and deletes clients on
// every engine: the secret is kept only as a digest that matches it and no
// other, a rotation moves the generation on and ends the old secret, and
// the audit log never holds the secret or its digest.
func TestOAuthClients(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) {
		db, clock := openTest(t)
		pid, oid := seed(t, db)
		var other int64
		mustUpdate(t, db, func(tx *Tx) error {
			p, err := tx.CreatePartner("Other")
			other = p.ID
			return err
		})
		mustUpdate(t, db, func(tx *Tx) error {
			if err := tx.CreateOAuthClient(&OAuthClient{ID: "c-partner", Name: "Dispatch", PartnerID: pid}, secretA); err != nil {
				return err
			}
			if err := tx.CreateOAuthClient(&OAuthClient{ID: "c-org", PartnerID: pid, OrganizationID: oid}, secretB); err != nil {
				return err
			}
			return tx.CreateOAuthClient(&OAuthClient{ID: "c-other", PartnerID: other}, secretA)
		})
		invalid := []struct {
			name   string
			client OAuthClient
			secret string
			field  string
			kind   error
		}{
			{"a taken id", OAuthClient{ID: "c-org", PartnerID: pid}, secretA, "", ErrConflict},
			{"a long name", OAuthClient{ID: "c-x", Name: strings.Repeat("n", MaxOAuthClientName+1), PartnerID: pid}, secretA, "clientName", ErrInvalid},
			{"a short secret", OAuthClient{ID: "c-x", PartnerID: pid}, "short", "clientSecret", ErrInvalid},
			{"an unknown partner", OAuthClient{ID: "c-x", PartnerID: 999}, secretA, "", ErrNotFound},
			{"another partner's organization", OAuthClient{ID: "c-x", PartnerID: other, OrganizationID: oid}, secretA, "entityId", ErrInvalid},
		}
		for _, tc := range invalid {
			err := db.Update(t.Context(), Actor{}, func(tx *Tx) error { return tx.CreateOAuthClient(&tc.client, tc.secret) })
			var se *Error
			if !errors.Is(err, tc.kind) || !errors.As(err, &se) || se.Field != tc.field {
				t.Errorf("%s: %v, want %v of field %q", tc.name, err, tc.kind, tc.field)
			}
		}
		created := clock.Now()
		db.View(t.Context(), func(tx *Tx) error {
			c, err := tx.OAuthClient("c-partner")
			if err != nil {
				t.Fatal(err)
			}
			if !c.Enabled || c.SecretGeneration != 1 || c.Name != "Dispatch" || !c.CreatedAt.Equal(created) || !c.SecretMatches(secretA) || c.SecretMatches(secretB) {
				t.Fatalf("created client: %+v", c)
			}
			ids := func(f OAuthClientFilter) []string {
				list, err := tx.OAuthClients(f)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, c := range list {
					out = append(out, c.ID)
				}
				return out
			}
			if got := strings.Join(ids(OAuthClientFilter{PartnerID: pid}), ","); got != "c-org,c-partner" {
				t.Errorf("the partner's clients: %s", got)
			}
			if got := strings.Join(ids(OAuthClientFilter{OrganizationID: oid}), ","); got != "c-org" {
				t.Errorf("the organization's clients: %s", got)
			}
			if got := len(ids(OAuthClientFilter{})); got != 3 {
				t.Errorf("%d clients in all", got)
			}
			return nil
		})

		clock.Advance(time.Hour)
		mustUpdate(t, db, func(tx *Tx) error {
			c, err := tx.SetOAuthClientEnabled("c-org", false)
			if err != nil || c.Enabled {
				t.Fatalf("disabled: %+v, %v", c, err)
			}
			c, err = tx.RotateOAuthClientSecret("c-org", secretA)
			if err != nil || c.SecretGeneration != 2 || !c.RefreshedAt.Equal(clock.Now()) || c.Enabled {
				t.Fatalf("rotated: %+v, %v", c, err)
			}
			return nil
		})
		db.View(t.Context(), func(tx *Tx) error {
			c, _ := tx.OAuthClient("c-org")
			if c.SecretMatches(secretB) || !c.SecretMatches(secretA) || c.SecretGeneration != 2 || !c.CreatedAt.Equal(created) {
				t.Fatalf("after the rotation: %+v", c)
			}
			return nil
		})
		mustUpdate(t, db, func(tx *Tx) error { return tx.DeleteOAuthClient("c-org") })
		for name, fn := range map[string]func(tx *Tx) error{
			"get":    func(tx *Tx) error { _, err := tx.OAuthClient("c-org"); return err },
			"delete": func(tx *Tx) error { return tx.DeleteOAuthClient("c-org") },
			"rotate": func(tx *Tx) error { _, err := tx.RotateOAuthClientSecret("c-org", secretB); return err },
			"enable": func(tx *Tx) error { _, err := tx.SetOAuthClientEnabled("c-org", true); return err },
		} {
			if err := db.Update(t.Context(), Actor{}, fn); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s of a deleted client: %v", name, err)
			}
		}

		entries, _, err := db.AuditLog(t.Context(), AuditFilter{}, Page{})
		if err != nil {
			t.Fatal(err)
		}
		actions := map[string]int{}
		for _, e := range entries {
			if e.EntityType != "oauthClient" {
				continue
			}
			actions[e.Action]++
			raw, _ := json.Marshal(e)
			if strings.Contains(string(raw), "secretHash") || strings.Contains(string(raw), "client-secret") {
				t.Errorf("audit entry holds the secret or its digest: %s", raw)
			}
		}
		want := map[string]int{"oauthClient.create": 3, "oauthClient.update": 1, "oauthClient.rotateSecret": 1, "oauthClient.delete": 1}
		for a, n := range want {
			if actions[a] != n {
				t.Errorf("%d audit entries %s, want %d (all: %v)", actions[a], a, n, actions)
			}
		}
	})
}
