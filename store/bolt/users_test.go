package bolt_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/fleetcam/fleetcam/store"
)

// Partners are their JSON under their 8-byte id; ids go on from the
// bucket's sequence.
func TestPartnersLayout(t *testing.T) {
	f := newFixture(t)
	f.put("partners", be8(5), []byte(`{"id":5,"name":"Old partner","createdAt":"2025-06-01T08:00:00Z"}`))
	f.setSequence("partners", 5)
	var added *Partner
	f.update(func(tx *Tx) error {
		var err error
		added, err = tx.CreatePartner("New partner")
		return err
	})
	if added.ID != 6 {
		t.Errorf("new partner id %d, want 6", added.ID)
	}
	var stored Partner
	if err := json.Unmarshal(f.get("partners", be8(6)), &stored); err != nil || stored.Name != "New partner" {
		t.Errorf("new partner stored as %+v %v", stored, err)
	}
	f.view(func(tx *Tx) error {
		if p, err := tx.Partner(5); err != nil || p.Name != "Old partner" {
			t.Errorf("partner written before %+v %v", p, err)
		}
		if n := tx.PartnerCount(); n != 3 {
			t.Errorf("%d partners, want 3", n)
		}
		return nil
	})
}

// Users are their JSON under their 8-byte id, with their id under their
// normalised e-mail in user_emails; an invitation token is the user's id
// under the token's SHA-256 in invite_tokens. Users and tokens an older
// version wrote are found, and the store writes new ones so.
func TestUsersLayout(t *testing.T) {
	f := newFixture(t)
	expires := f.clock.Now().Add(24 * time.Hour)
	oldToken := sha256.Sum256([]byte("old token"))
	f.put("users", be8(3), fmt.Appendf(nil, `{"id":3,"email":"old@example.com","partnerId":%d,"accessLevel":"editor",`+
		`"createdAt":"2025-06-01T08:00:00Z","inviteExpiresAt":%q}`, f.partner.ID, expires.Format(time.RFC3339)))
	f.put("user_emails", []byte("old@example.com"), be8(3))
	f.put("invite_tokens", oldToken[:], be8(3))
	f.setSequence("users", 3)

	f.view(func(tx *Tx) error {
		if u, err := tx.UserByEmail(" Old@Example.com"); err != nil || u.ID != 3 || u.AccessLevel != AccessEditor {
			t.Errorf("user written before, by e-mail: %+v %v", u, err)
		}
		if u, err := tx.InvitedUser("old token"); err != nil || u.ID != 3 {
			t.Errorf("user invited before: %+v %v", u, err)
		}
		return nil
	})
	err := f.db.Update(t.Context(), Actor{}, func(tx *Tx) error {
		return tx.CreateUser(&User{Email: "OLD@example.com", PartnerID: f.partner.ID, AccessLevel: AccessViewer})
	})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("user with the e-mail of one written before: %v, want ErrConflict", err)
	}

	u := &User{Email: "New@Example.com", OrganizationID: f.org.ID, PartnerID: f.partner.ID, AccessLevel: AccessViewer}
	f.update(func(tx *Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		return tx.SetInviteToken(u, "new token", expires)
	})
	newToken := sha256.Sum256([]byte("new token"))
	if u.ID != 4 || !bytes.Equal(f.get("user_emails", []byte("new@example.com")), be8(4)) ||
		!bytes.Equal(f.get("invite_tokens", newToken[:]), be8(4)) {
		t.Errorf("new user %d: e-mail index %x, token %x; want id 4 under both", u.ID,
			f.get("user_emails", []byte("new@example.com")), f.get("invite_tokens", newToken[:]))
	}
	var stored User
	if err := json.Unmarshal(f.get("users", be8(4)), &stored); err != nil || stored.Email != "new@example.com" ||
		!stored.InviteExpiresAt.Equal(expires) {
		t.Errorf("new user stored as %+v %v", stored, err)
	}

	f.update(func(tx *Tx) error {
		_, err := tx.RedeemInviteToken("old token", []byte("hash"))
		return err
	})
	if f.get("invite_tokens", oldToken[:]) != nil {
		t.Error("the redeemed token is still recorded")
	}
	f.view(func(tx *Tx) error {
		if u, err := tx.User(3); err != nil || string(u.PasswordHash) != "hash" || !u.InviteExpiresAt.IsZero() {
			t.Errorf("user after redeeming %+v %v", u, err)
		}
		list, n, err := tx.Users(UserFilter{PartnerID: f.partner.ID}, Page{})
		if err != nil || n != 2 || list[0].ID != 3 || list[1].ID != 4 {
			t.Errorf("users of the partner %+v (%d) %v, want 3 and 4", list, n, err)
		}
		return nil
	})
}
