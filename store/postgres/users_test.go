package postgres

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestUsers stores a partner user and an organization user, finds them by
// id and e-mail, refuses a second user with the same e-mail in a
// transaction that goes on, and replaces one.
func TestUsers(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	partnerUser := &store.User{Email: "ann@example.com", Name: "Ann", PasswordHash: []byte("$2a$hash"),
		PartnerID: d.p.ID, AccessLevel: store.AccessEditor, CreatedAt: testTime}
	orgUser := &store.User{Email: "bob@example.com", PartnerID: d.p.ID, OrganizationID: d.org.ID,
		AccessLevel: store.AccessViewer, CreatedAt: testTime, InviteExpiresAt: testTime.Add(72 * time.Hour)}
	write(t, e, func(tx *tx) error {
		for _, u := range []*store.User{partnerUser, orgUser} {
			if err := tx.Users().Insert(u); err != nil {
				return err
			}
		}
		err := tx.Users().Insert(&store.User{Email: "ann@example.com", PartnerID: d.q.ID, CreatedAt: testTime})
		wantErr(t, "a second user with ann's e-mail", err, store.ErrConflict)
		// The transaction goes on after the refusal.
		return tx.Users().Insert(&store.User{Email: "cid@example.com", PartnerID: d.q.ID, CreatedAt: testTime})
	})
	if orgUser.ID <= partnerUser.ID {
		t.Fatalf("user ids %d, %d; want increasing", partnerUser.ID, orgUser.ID)
	}
	read(t, e, func(tx *tx) error {
		for _, want := range []*store.User{partnerUser, orgUser} {
			got, err := tx.Users().Get(want.ID)
			if err != nil {
				return err
			}
			wantEqual(t, "user by id", got, want)
			got, err = tx.Users().ByEmail(want.Email)
			if err != nil {
				return err
			}
			wantEqual(t, "user by e-mail", got, want)
		}
		_, err := tx.Users().Get(orgUser.ID + 100)
		wantErr(t, "an unknown user", err, store.ErrNotFound)
		_, err = tx.Users().ByEmail("nobody@example.com")
		wantErr(t, "an unknown e-mail", err, store.ErrNotFound)
		return nil
	})

	// The invited user sets a password: the invitation's expiry goes.
	changed := *orgUser
	changed.Name, changed.PasswordHash, changed.InviteExpiresAt = "Bob", []byte("$2a$other"), time.Time{}
	changed.AccessLevel = store.AccessEditorWithoutMediaAccess
	write(t, e, func(tx *tx) error {
		if err := tx.Users().Put(&changed); err != nil {
			return err
		}
		wantErr(t, "Put of an unknown user", tx.Users().Put(&store.User{ID: orgUser.ID + 100, Email: "x@example.com"}),
			store.ErrNotFound)
		return nil
	})
	read(t, e, func(tx *tx) error {
		got, err := tx.Users().ByEmail(changed.Email)
		if err != nil {
			return err
		}
		wantEqual(t, "the user put", got, &changed)
		return nil
	})
}

// TestUsersList lists four users, 1 and 3 of the partner, 2 and 4 of the
// organization, as UserFilter.Match selects them, in id order.
func TestUsersList(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	var ids []int64
	write(t, e, func(tx *tx) error {
		for i, org := range []int64{0, d.org.ID, 0, d.org.ID} {
			u := &store.User{Email: fmt.Sprintf("user%d@example.com", i+1), PartnerID: d.p.ID, OrganizationID: org,
				CreatedAt: testTime}
			if err := tx.Users().Insert(u); err != nil {
				return err
			}
			ids = append(ids, u.ID)
		}
		// A user of the other partner, which no filter below but the
		// first admits.
		return tx.Users().Insert(&store.User{Email: "q@example.com", PartnerID: d.q.ID, CreatedAt: testTime})
	})
	all := append(slices.Clone(ids), ids[3]+1)
	tests := []struct {
		name      string
		filter    store.UserFilter
		page      store.Page
		wantIDs   []int64
		wantTotal int
	}{
		{"everyone in id order", store.UserFilter{}, store.Page{}, all, 5},
		{"a partner's", store.UserFilter{PartnerID: d.p.ID}, store.Page{}, ids, 4},
		{"an organization's users", store.UserFilter{OrganizationID: d.org.ID}, store.Page{}, []int64{ids[1], ids[3]}, 2},
		{"partner users only", store.UserFilter{PartnerID: d.p.ID, PartnerUsersOnly: true}, store.Page{}, []int64{ids[0], ids[2]}, 2},
		{"partner users of every partner", store.UserFilter{PartnerUsersOnly: true}, store.Page{}, []int64{ids[0], ids[2], all[4]}, 3},
		{"another partner's", store.UserFilter{PartnerID: d.q.ID + 1}, store.Page{}, nil, 0},
		{"a page", store.UserFilter{}, store.Page{Limit: 2, Offset: 1}, []int64{ids[1], ids[2]}, 5},
		{"a page of a filtered list", store.UserFilter{OrganizationID: d.org.ID}, store.Page{Limit: 1, Offset: 1}, []int64{ids[3]}, 2},
		{"a page past the end", store.UserFilter{PartnerID: d.p.ID}, store.Page{Limit: 2, Offset: 4}, nil, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, e, func(tx *tx) error {
				got, total, err := tx.Users().List(tc.filter, tc.page)
				if err != nil {
					return err
				}
				var gotIDs []int64
				for _, u := range got {
					gotIDs = append(gotIDs, u.ID)
					if !tc.filter.Match(&u) {
						t.Errorf("user %d does not match the filter", u.ID)
					}
				}
				if !slices.Equal(gotIDs, tc.wantIDs) || total != tc.wantTotal {
					t.Errorf("got %v of %d, want %v of %d", gotIDs, total, tc.wantIDs, tc.wantTotal)
				}
				return nil
			})
		})
	}
}

// TestInviteTokens records, replaces and forgets a token's user.
func TestInviteTokens(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	users := []*store.User{{Email: "ann@example.com"}, {Email: "bob@example.com"}}
	hash := sha256.Sum256([]byte("token"))
	other := sha256.Sum256([]byte("other"))
	write(t, e, func(tx *tx) error {
		for _, u := range users {
			u.PartnerID, u.CreatedAt = d.p.ID, testTime
			if err := tx.Users().Insert(u); err != nil {
				return err
			}
		}
		return tx.InviteTokens().Put(hash, users[0].ID)
	})
	ann, bob := users[0].ID, users[1].ID
	userOf := func(h [sha256.Size]byte) (id int64, err error) {
		read(t, e, func(tx *tx) error {
			id, err = tx.InviteTokens().UserID(h)
			return nil
		})
		return id, err
	}
	if id, err := userOf(hash); err != nil || id != ann {
		t.Fatalf("UserID = %d, %v; want %d", id, err, ann)
	}
	_, err := userOf(other)
	wantErr(t, "an unknown token", err, store.ErrNotFound)
	write(t, e, func(tx *tx) error { return tx.InviteTokens().Put(hash, bob) })
	if id, err := userOf(hash); err != nil || id != bob {
		t.Fatalf("UserID after a second Put = %d, %v; want %d", id, err, bob)
	}
	write(t, e, func(tx *tx) error {
		if err := tx.InviteTokens().Delete(hash); err != nil {
			return err
		}
		return tx.InviteTokens().Delete(other)
	})
	_, err = userOf(hash)
	wantErr(t, "a deleted token", err, store.ErrNotFound)
}

// TestUsersSameEmailAtOnce inserts one e-mail from eight transactions at
// once: one inserts it, and each of the others, run again after losing the
// race, finds it taken.
func TestUsersSameEmailAtOnce(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	d := seedDirectory(t, e)
	const writers = 8
	errs := make(chan error, writers)
	for range writers {
		go func() {
			errs <- e.update(t.Context(), func(tx *tx) error {
				return tx.Users().Insert(&store.User{Email: "same@example.com", PartnerID: d.p.ID, CreatedAt: testTime})
			})
		}()
	}
	inserted := 0
	for range writers {
		switch err := <-errs; {
		case err == nil:
			inserted++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("a losing insert: %v; want ErrConflict", err)
		}
	}
	if inserted != 1 {
		t.Errorf("%d transactions inserted the e-mail; want 1", inserted)
	}
}
