package enginetest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// directoryTests are the tests of partners, organizations, groups,
// users, devices and their ownerships.
var directoryTests = []test{
	{"Partners", testPartners},
	{"Organizations", testOrganizations},
	{"OrganizationsList", testOrganizationsList},
	{"Groups", testGroups},
	{"Users", testUsers},
	{"UsersList", testUsersList},
	{"InviteTokens", testInviteTokens},
	{"UsersSameEmailAtOnce", testUsersSameEmailAtOnce},
	{"Devices", testDevices},
	{"DeviceStamp", testDeviceStamp},
	{"DevicesList", testDevicesList},
	{"DeviceOwnerships", testDeviceOwnerships},
}

func testPartners(t *testing.T, e store.Engine) {
	var ids []int64
	write(t, e, func(tx store.Records) error {
		for _, name := range []string{"A", "B", "C"} {
			p := &store.Partner{Name: name, CreatedAt: testTime}
			if err := tx.Partners().Insert(p); err != nil {
				return err
			}
			ids = append(ids, p.ID)
		}
		return nil
	})
	if !increasing(ids) {
		t.Fatalf("partner ids %v; want increasing", ids)
	}
	read(t, e, func(tx store.Records) error {
		p, err := tx.Partners().Get(ids[1])
		if err != nil {
			return err
		}
		wantEqual(t, "partner", p, &store.Partner{ID: ids[1], Name: "B", CreatedAt: testTime})
		_, err = tx.Partners().Get(ids[2] + 1)
		wantErr(t, "an unknown partner", err, store.ErrNotFound)
		n, err := tx.Partners().Count()
		if err != nil || n != 3 {
			t.Errorf("Count = %d, %v; want 3", n, err)
		}
		return nil
	})
}

// testOrganizations stores an organization with every field set, its
// partners and invitations in an order that is not the ids', reads it back
// as stored, and replaces its lists.
func testOrganizations(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	var r *store.Partner
	write(t, e, func(tx store.Records) error {
		r = &store.Partner{Name: "R", CreatedAt: testTime}
		return tx.Partners().Insert(r)
	})
	// Partner 999 does not exist: an invitation names a partner as given.
	o := &store.Organization{Name: "Shared", PartnerID: d.q.ID, PartnerIDs: []int64{d.q.ID, r.ID, d.p.ID},
		InvitedPartnerIDs: []int64{999, d.p.ID + 100}, IsOrganizationProfileEnabled: true, SSOSalt: []byte{0, 1, 2, 255},
		Retention: store.Retention{PurgeDays: 31, PurgeDaysFrontCamera: 7, PurgeDaysRearCamera: 3,
			PurgeDaysAuxiliaryCameras: 2, DeviceRetentionMinutes: 600},
		LiveVideoTimeoutSeconds: 120, DefaultDataProfileID: 42, CreatedAt: testTime}
	// Without salt or invitations, exclusive.
	plain := &store.Organization{Name: "Plain", PartnerID: d.p.ID, PartnerIDs: []int64{d.p.ID},
		ExclusivePartnerOnly: true, Retention: store.Retention{PurgeDays: 31}, CreatedAt: testTime}
	write(t, e, func(tx store.Records) error {
		for _, o := range []*store.Organization{o, plain} {
			if err := tx.Organizations().Insert(o); err != nil {
				return err
			}
		}
		return nil
	})
	if o.ID <= d.org.ID || plain.ID <= o.ID {
		t.Fatalf("organization ids %d, %d, %d; want increasing", d.org.ID, o.ID, plain.ID)
	}
	get := func(id int64) (got *store.Organization) {
		t.Helper()
		read(t, e, func(tx store.Records) (err error) {
			got, err = tx.Organizations().Get(id)
			return err
		})
		return got
	}
	wantEqual(t, "the organization", get(o.ID), o)
	wantEqual(t, "the plain organization", get(plain.ID), plain)
	read(t, e, func(tx store.Records) error {
		_, err := tx.Organizations().Get(plain.ID + 1)
		wantErr(t, "an unknown organization", err, store.ErrNotFound)
		return nil
	})

	// r leaves, p moves first, q's invitation is accepted by another
	// partner id, and a partner named twice is admitted once.
	changed := *o
	changed.Name, changed.ExclusivePartnerOnly, changed.SSOSalt = "Renamed", true, []byte("salt")
	changed.PartnerIDs = []int64{d.p.ID, d.q.ID, d.p.ID}
	changed.InvitedPartnerIDs = []int64{r.ID, 999}
	changed.Retention = store.Retention{PurgeDays: 90}
	changed.LiveVideoTimeoutSeconds, changed.DefaultDataProfileID = 0, 0
	write(t, e, func(tx store.Records) error {
		if err := tx.Organizations().Put(&changed); err != nil {
			return err
		}
		unknown := *plain
		unknown.ID = plain.ID + 1
		wantErr(t, "Put of an unknown organization", tx.Organizations().Put(&unknown), store.ErrNotFound)
		return nil
	})
	want := changed
	want.PartnerIDs = []int64{d.p.ID, d.q.ID}
	wantEqual(t, "the organization put", get(o.ID), &want)

	// Emptied lists are nil, as the record leaves a list it has none of.
	changed.PartnerIDs, changed.InvitedPartnerIDs = []int64{}, nil
	write(t, e, func(tx store.Records) error { return tx.Organizations().Put(&changed) })
	got := get(o.ID)
	if got.PartnerIDs != nil || got.InvitedPartnerIDs != nil {
		t.Errorf("emptied lists read %#v, %#v; want nil", got.PartnerIDs, got.InvitedPartnerIDs)
	}
}

// testOrganizationsList lists four organizations as OrganizationFilter
// selects them, in id order:
//
//	   creator  shares with  invites
//	1  p        q            -
//	2  q        -            p
//	3  p        q            -
//	4  q        -            -
func testOrganizationsList(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	p, q := d.p.ID, d.q.ID
	ids := []int64{d.org.ID}
	write(t, e, func(tx store.Records) error {
		for _, o := range []*store.Organization{
			{Name: "Two", PartnerID: q, PartnerIDs: []int64{q}, InvitedPartnerIDs: []int64{p}},
			{Name: "Three", PartnerID: p, PartnerIDs: []int64{p, q}},
			{Name: "Four", PartnerID: q, PartnerIDs: []int64{q}},
		} {
			o.CreatedAt = testTime
			if err := tx.Organizations().Insert(o); err != nil {
				return err
			}
			ids = append(ids, o.ID)
		}
		return nil
	})
	tests := []struct {
		name      string
		filter    store.OrganizationFilter
		page      store.Page
		wantIDs   []int64
		wantTotal int
	}{
		{"everything in id order", store.OrganizationFilter{}, store.Page{}, ids, 4},
		{"created by or shared with a partner", store.OrganizationFilter{PartnerID: q}, store.Page{}, ids, 4},
		{"created by or shared with p", store.OrganizationFilter{PartnerID: p}, store.Page{}, []int64{ids[0], ids[2]}, 2},
		{"inviting a partner", store.OrganizationFilter{InvitedPartnerID: p}, store.Page{}, []int64{ids[1]}, 1},
		{"inviting no one", store.OrganizationFilter{InvitedPartnerID: q}, store.Page{}, nil, 0},
		{"ids", store.OrganizationFilter{IDs: map[int64]bool{ids[2]: true, ids[3]: true}}, store.Page{}, ids[2:], 2},
		{"ids set false", store.OrganizationFilter{IDs: map[int64]bool{ids[2]: true, ids[3]: false}}, store.Page{}, ids[2:3], 1},
		{"no id", store.OrganizationFilter{IDs: map[int64]bool{}}, store.Page{}, nil, 0},
		{"ids and partner", store.OrganizationFilter{IDs: map[int64]bool{ids[1]: true, ids[2]: true}, PartnerID: p}, store.Page{}, ids[2:3], 1},
		{"partner and invitation", store.OrganizationFilter{PartnerID: q, InvitedPartnerID: p}, store.Page{}, ids[1:2], 1},
		{"a page", store.OrganizationFilter{PartnerID: q}, store.Page{Limit: 2, Offset: 1}, ids[1:3], 4},
		{"a page past the end", store.OrganizationFilter{}, store.Page{Limit: 10, Offset: 4}, nil, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, e, func(tx store.Records) error {
				got, total, err := tx.Organizations().List(tc.filter, tc.page)
				if err != nil {
					return err
				}
				var gotIDs []int64
				for _, o := range got {
					gotIDs = append(gotIDs, o.ID)
				}
				if !slices.Equal(gotIDs, tc.wantIDs) || total != tc.wantTotal {
					t.Errorf("got %v of %d, want %v of %d", gotIDs, total, tc.wantIDs, tc.wantTotal)
				}
				return nil
			})
		})
	}
}

// testGroups stores groups of two organizations and lists each's.
func testGroups(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	other := &store.Organization{Name: "Other", PartnerID: d.q.ID, PartnerIDs: []int64{d.q.ID}, CreatedAt: testTime}
	ids := []int64{d.group.ID}
	write(t, e, func(tx store.Records) error {
		if err := tx.Organizations().Insert(other); err != nil {
			return err
		}
		for _, g := range []*store.Group{
			{OrganizationID: other.ID, Name: "Elsewhere"},
			{OrganizationID: d.org.ID, Name: "South"},
			{OrganizationID: d.org.ID, Name: "East"},
		} {
			g.CreatedAt = testTime
			if err := tx.Groups().Insert(g); err != nil {
				return err
			}
			ids = append(ids, g.ID)
		}
		return nil
	})
	if !increasing(ids) {
		t.Fatalf("group ids %v; want increasing", ids)
	}
	read(t, e, func(tx store.Records) error {
		g, err := tx.Groups().Get(ids[2])
		if err != nil {
			return err
		}
		wantEqual(t, "group", g, &store.Group{ID: ids[2], OrganizationID: d.org.ID, Name: "South", CreatedAt: testTime})
		_, err = tx.Groups().Get(ids[3] + 1)
		wantErr(t, "an unknown group", err, store.ErrNotFound)
		for _, tc := range []struct {
			org       int64
			page      store.Page
			wantIDs   []int64
			wantTotal int
		}{
			{d.org.ID, store.Page{}, []int64{ids[0], ids[2], ids[3]}, 3},
			{d.org.ID, store.Page{Limit: 1, Offset: 1}, []int64{ids[2]}, 3},
			{d.org.ID, store.Page{Offset: 2}, []int64{ids[3]}, 3},
			{d.org.ID, store.Page{Offset: 3}, nil, 3},
			{other.ID, store.Page{}, []int64{ids[1]}, 1},
			{other.ID + 1, store.Page{}, nil, 0},
		} {
			got, total, err := tx.Groups().List(tc.org, tc.page)
			if err != nil {
				return err
			}
			var gotIDs []int64
			for _, g := range got {
				gotIDs = append(gotIDs, g.ID)
			}
			if !slices.Equal(gotIDs, tc.wantIDs) || total != tc.wantTotal {
				t.Errorf("groups of %d, %+v: got %v of %d, want %v of %d", tc.org, tc.page, gotIDs, total, tc.wantIDs, tc.wantTotal)
			}
		}
		return nil
	})
}

// testUsers stores a partner user and an organization user, finds them by
// id and e-mail, refuses a second user with the same e-mail in a
// transaction that goes on, and replaces one.
func testUsers(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	partnerUser := &store.User{Email: "ann@example.com", Name: "Ann", PasswordHash: []byte("$2a$hash"),
		PartnerID: d.p.ID, AccessLevel: store.AccessEditor, CreatedAt: testTime}
	orgUser := &store.User{Email: "bob@example.com", PartnerID: d.p.ID, OrganizationID: d.org.ID,
		AccessLevel: store.AccessViewer, CreatedAt: testTime, InviteExpiresAt: testTime.Add(72 * time.Hour)}
	write(t, e, func(tx store.Records) error {
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
	read(t, e, func(tx store.Records) error {
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
	write(t, e, func(tx store.Records) error {
		if err := tx.Users().Put(&changed); err != nil {
			return err
		}
		wantErr(t, "Put of an unknown user", tx.Users().Put(&store.User{ID: orgUser.ID + 100, Email: "x@example.com"}),
			store.ErrNotFound)
		return nil
	})
	read(t, e, func(tx store.Records) error {
		got, err := tx.Users().ByEmail(changed.Email)
		if err != nil {
			return err
		}
		wantEqual(t, "the user put", got, &changed)
		return nil
	})
}

// testUsersList lists four users, 1 and 3 of the partner, 2 and 4 of the
// organization, in id order, with each filter.
func testUsersList(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	var ids []int64
	write(t, e, func(tx store.Records) error {
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
			read(t, e, func(tx store.Records) error {
				got, total, err := tx.Users().List(tc.filter, tc.page)
				if err != nil {
					return err
				}
				var gotIDs []int64
				for _, u := range got {
					gotIDs = append(gotIDs, u.ID)
				}
				if !slices.Equal(gotIDs, tc.wantIDs) || total != tc.wantTotal {
					t.Errorf("got %v of %d, want %v of %d", gotIDs, total, tc.wantIDs, tc.wantTotal)
				}
				return nil
			})
		})
	}
}

// testInviteTokens records, replaces and forgets a token's user.
func testInviteTokens(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	users := []*store.User{{Email: "ann@example.com"}, {Email: "bob@example.com"}}
	hash := sha256.Sum256([]byte("token"))
	other := sha256.Sum256([]byte("other"))
	write(t, e, func(tx store.Records) error {
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
		read(t, e, func(tx store.Records) error {
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
	write(t, e, func(tx store.Records) error { return tx.InviteTokens().Put(hash, bob) })
	if id, err := userOf(hash); err != nil || id != bob {
		t.Fatalf("UserID after a second Put = %d, %v; want %d", id, err, bob)
	}
	write(t, e, func(tx store.Records) error {
		if err := tx.InviteTokens().Delete(hash); err != nil {
			return err
		}
		return tx.InviteTokens().Delete(other)
	})
	_, err = userOf(hash)
	wantErr(t, "a deleted token", err, store.ErrNotFound)
}

// testUsersSameEmailAtOnce inserts one e-mail from eight transactions at
// once: one inserts it, and each of the others, run again after losing the
// race, finds it taken.
func testUsersSameEmailAtOnce(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	const writers = 8
	errs := make(chan error, writers)
	for range writers {
		go func() {
			errs <- e.Update(t.Context(), func(tx store.Records) error {
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

// testDevices stores a device with every field set, refuses its IMEI a
// second time in a transaction that goes on, replaces it in its
// organization and deletes it.
func testDevices(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	dev := &store.Device{IMEI: testIMEI(1), Name: "Truck 1", OrganizationID: d.org.ID, PartnerID: d.q.ID,
		GroupID: d.group.ID, Status: store.DeviceActivated, ProductType: "dc500", DataProfileID: 3,
		CreatedAt: testTime, ActivatedAt: testTime.Add(time.Hour), Ownership: 7, PreviousOwnerUntil: testTime.Add(-time.Hour)}
	bare := &store.Device{IMEI: testIMEI(2), OrganizationID: d.org.ID, PartnerID: d.p.ID,
		Status: store.DevicePendingActivation, CreatedAt: testTime}
	write(t, e, func(tx store.Records) error {
		for _, dev := range []*store.Device{dev, bare} {
			if err := tx.Devices().Insert(dev); err != nil {
				return err
			}
		}
		again := *bare
		again.Name = "again"
		wantErr(t, "a second device with one IMEI", tx.Devices().Insert(&again), store.ErrConflict)
		// The transaction goes on after the refusal.
		return tx.Devices().Insert(&store.Device{IMEI: testIMEI(3), OrganizationID: d.org.ID, PartnerID: d.p.ID,
			Status: store.DeviceSuspended, CreatedAt: testTime})
	})
	get := func(imei string) (got *store.Device, err error) {
		read(t, e, func(tx store.Records) error {
			got, err = tx.Devices().Get(imei)
			return nil
		})
		return got, err
	}
	for _, want := range []*store.Device{dev, bare} {
		got, err := get(want.IMEI)
		if err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "device", got, want)
	}
	_, err := get(testIMEI(4))
	wantErr(t, "an unknown device", err, store.ErrNotFound)

	changed := *dev
	changed.Name, changed.GroupID, changed.Status, changed.ActivatedAt = "Renamed", 0, store.DeviceDeactivated, testTime
	changed.PartnerID = d.p.ID
	write(t, e, func(tx store.Records) error {
		if err := tx.Devices().Put(&changed); err != nil {
			return err
		}
		wantErr(t, "Put of an unknown device", tx.Devices().Put(&store.Device{IMEI: testIMEI(4),
			OrganizationID: d.org.ID, PartnerID: d.p.ID, Status: store.DeviceActivated}), store.ErrNotFound)
		return nil
	})
	got, err := get(dev.IMEI)
	if err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "the device put", got, &changed)

	write(t, e, func(tx store.Records) error {
		if err := tx.Devices().Delete(dev.IMEI); err != nil {
			return err
		}
		wantErr(t, "Delete of a deleted device", tx.Devices().Delete(dev.IMEI), store.ErrNotFound)
		return nil
	})
	_, err = get(dev.IMEI)
	wantErr(t, "a deleted device", err, store.ErrNotFound)
}

// testDeviceStamp reads the stamp of a device as it is written, deleted
// and added again: it changes whenever the record does and with nothing
// else, and no two versions of the record share one. (An engine may also
// change it on a write that leaves the record as it was.)
func testDeviceStamp(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	dev := &store.Device{IMEI: testIMEI(1), Name: "Truck", OrganizationID: d.org.ID, PartnerID: d.p.ID,
		Status: store.DeviceActivated, CreatedAt: testTime}
	stamp := func() (s uint64, err error) {
		read(t, e, func(tx store.Records) error {
			s, err = tx.Devices().Stamp(dev.IMEI)
			return nil
		})
		return s, err
	}
	_, err := stamp()
	wantErr(t, "the stamp of an unknown device", err, store.ErrNotFound)
	seen := map[uint64]string{}
	see := func(what string) {
		t.Helper()
		s, err := stamp()
		if err != nil {
			t.Fatal(err)
		}
		if s == 0 {
			t.Fatalf("the stamp %s is 0, which says none was read", what)
		}
		if again, _ := stamp(); again != s {
			t.Fatalf("the stamp %s went from %d to %d without a write", what, s, again)
		}
		if before, ok := seen[s]; ok {
			t.Fatalf("the stamp %s is %d, as it was %s", what, s, before)
		}
		seen[s] = what
	}
	write(t, e, func(tx store.Records) error { return tx.Devices().Insert(dev) })
	see("after the insert")
	write(t, e, func(tx store.Records) error { dev.Name = "Renamed"; return tx.Devices().Put(dev) })
	see("after a put")
	// Another device's write leaves it be.
	write(t, e, func(tx store.Records) error {
		other := *dev
		other.IMEI = testIMEI(2)
		return tx.Devices().Insert(&other)
	})
	if s, err := stamp(); err != nil || seen[s] != "after a put" {
		t.Fatalf("another device's insert changed the stamp to %d, %v", s, err)
	}
	write(t, e, func(tx store.Records) error {
		if err := tx.Devices().Delete(dev.IMEI); err != nil {
			return err
		}
		dev.Name = "Added again"
		return tx.Devices().Insert(dev)
	})
	see("after a removal and a new add")
}

// testDevicesList lists devices of two organizations in IMEI order, with each
// filter.
func testDevicesList(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	other := &store.Organization{Name: "Other", PartnerID: d.q.ID, PartnerIDs: []int64{d.q.ID}, CreatedAt: testTime}
	write(t, e, func(tx store.Records) error {
		if err := tx.Organizations().Insert(other); err != nil {
			return err
		}
		for _, dev := range []*store.Device{
			// Inserted out of IMEI order.
			{IMEI: testIMEI(5), Name: "ÄRGER Van", OrganizationID: d.org.ID, PartnerID: d.p.ID, GroupID: d.group.ID},
			{IMEI: testIMEI(1), Name: "Truck 1", OrganizationID: d.org.ID, PartnerID: d.p.ID, GroupID: d.group.ID},
			{IMEI: testIMEI(3), Name: "truck 3 (50%_off)", OrganizationID: d.org.ID, PartnerID: d.q.ID},
			{IMEI: testIMEI(2), Name: "Van 2", OrganizationID: other.ID, PartnerID: d.q.ID},
			{IMEI: testIMEI(4), Name: "", OrganizationID: d.org.ID, PartnerID: d.q.ID},
		} {
			dev.Status, dev.CreatedAt = store.DeviceActivated, testTime
			if err := tx.Devices().Insert(dev); err != nil {
				return err
			}
		}
		return nil
	})
	imeis := func(ns ...int) []string {
		var out []string
		for _, n := range ns {
			out = append(out, testIMEI(n))
		}
		return out
	}
	org := d.org.ID
	tests := []struct {
		name      string
		filter    store.DeviceFilter
		page      store.Page
		want      []string
		wantTotal int
	}{
		{"every device in IMEI order", store.DeviceFilter{}, store.Page{}, imeis(1, 2, 3, 4, 5), 5},
		{"an organization's", store.DeviceFilter{OrganizationID: org}, store.Page{}, imeis(1, 3, 4, 5), 4},
		{"a partner's in every organization", store.DeviceFilter{PartnerID: d.q.ID}, store.Page{}, imeis(2, 3, 4), 3},
		{"a partner's in one organization", store.DeviceFilter{OrganizationID: org, PartnerID: d.q.ID}, store.Page{}, imeis(3, 4), 2},
		{"a group's", store.DeviceFilter{OrganizationID: org, GroupID: d.group.ID}, store.Page{}, imeis(1, 5), 2},
		{"one IMEI", store.DeviceFilter{OrganizationID: org, IMEI: testIMEI(3)}, store.Page{}, imeis(3), 1},
		{"one IMEI of another organization", store.DeviceFilter{OrganizationID: org, IMEI: testIMEI(2)}, store.Page{}, nil, 0},
		{"a name in any case", store.DeviceFilter{Name: "TRUCK"}, store.Page{}, imeis(1, 3), 2},
		{"a name beyond ASCII in any case", store.DeviceFilter{Name: "ärger"}, store.Page{}, imeis(5), 1},
		{"a name with LIKE's wildcards, literally", store.DeviceFilter{Name: "50%_"}, store.Page{}, imeis(3), 1},
		{"a wildcard alone, only where a name holds it", store.DeviceFilter{Name: "%"}, store.Page{}, imeis(3), 1},
		{"no name matches", store.DeviceFilter{Name: "bus"}, store.Page{}, nil, 0},
		{"a set of IMEIs", store.DeviceFilter{IMEIs: map[string]bool{testIMEI(4): true, testIMEI(2): true, testIMEI(1): false}}, store.Page{}, imeis(2, 4), 2},
		{"an empty set of IMEIs", store.DeviceFilter{IMEIs: map[string]bool{}}, store.Page{}, nil, 0},
		{"every field", store.DeviceFilter{OrganizationID: org, PartnerID: d.p.ID, GroupID: d.group.ID, IMEI: testIMEI(5),
			Name: "van", IMEIs: map[string]bool{testIMEI(5): true}}, store.Page{}, imeis(5), 1},
		{"a page", store.DeviceFilter{}, store.Page{Limit: 2, Offset: 2}, imeis(3, 4), 5},
		{"a page of a filtered list", store.DeviceFilter{OrganizationID: org}, store.Page{Limit: 2, Offset: 3}, imeis(5), 4},
		{"a page past the end", store.DeviceFilter{OrganizationID: org}, store.Page{Limit: 2, Offset: 9}, nil, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read(t, e, func(tx store.Records) error {
				got, total, err := tx.Devices().List(tc.filter, tc.page)
				if err != nil {
					return err
				}
				var gotIMEIs []string
				for _, dev := range got {
					gotIMEIs = append(gotIMEIs, dev.IMEI)
				}
				if !slices.Equal(gotIMEIs, tc.want) || total != tc.wantTotal {
					t.Errorf("got %v of %d, want %v of %d", gotIMEIs, total, tc.want, tc.wantTotal)
				}
				return nil
			})
		})
	}
	read(t, e, func(tx store.Records) error {
		for org, want := range map[int64][]string{d.org.ID: imeis(1, 3, 4, 5), other.ID: imeis(2), other.ID + 1: nil} {
			got, err := tx.Devices().OrganizationIMEIs(org)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				t.Errorf("OrganizationIMEIs(%d) = %v; want %v", org, got, want)
			}
		}
		return nil
	})
}

// testDeviceOwnerships logs ownerships of two IMEIs, ends one, records a
// stay from before ownership numbers, and reads each IMEI's log.
func testDeviceOwnerships(t *testing.T, e store.Engine) {
	d := seedDirectory(t, e)
	a, b := testIMEI(1), testIMEI(2)
	var numbers []int64
	insert := func(imei string) *store.DeviceOwnership {
		o := &store.DeviceOwnership{IMEI: imei, OrganizationID: d.org.ID}
		write(t, e, func(tx store.Records) error { return tx.DeviceOwnerships().Insert(o) })
		numbers = append(numbers, o.Ownership)
		return o
	}
	first := insert(a)
	insert(b)
	second := insert(a)
	// The numbers rise across IMEIs, in transactions of their own.
	if !increasing(numbers) || numbers[0] <= 0 {
		t.Fatalf("ownership numbers %v; want positive and increasing", numbers)
	}
	read(t, e, func(tx store.Records) error {
		_, err := tx.DeviceOwnerships().Last(testIMEI(3))
		wantErr(t, "the last ownership of an IMEI never owned", err, store.ErrNotFound)
		log, err := tx.DeviceOwnerships().List(testIMEI(3))
		if err != nil || len(log) != 0 {
			t.Errorf("the log of an IMEI never owned: %v, %v; want none", log, err)
		}
		return nil
	})

	// The first stay ended, at a time the log keeps to the millisecond;
	// a device from before ownership numbers is logged under 0.
	ended := testTime.Add(123 * time.Microsecond)
	write(t, e, func(tx store.Records) error {
		if err := tx.DeviceOwnerships().Put(&store.DeviceOwnership{IMEI: a, Ownership: first.Ownership,
			OrganizationID: d.org.ID, EndedAt: ended}); err != nil {
			return err
		}
		return tx.DeviceOwnerships().Put(&store.DeviceOwnership{IMEI: a, Ownership: 0, OrganizationID: d.org.ID,
			EndedAt: testTime.Add(-time.Hour)})
	})
	read(t, e, func(tx store.Records) error {
		log, err := tx.DeviceOwnerships().List(a)
		if err != nil {
			return err
		}
		wantEqual(t, "the log of "+a, log, []store.DeviceOwnership{
			{IMEI: a, Ownership: 0, OrganizationID: d.org.ID, EndedAt: testTime.Add(-time.Hour).Truncate(time.Millisecond)},
			{IMEI: a, Ownership: first.Ownership, OrganizationID: d.org.ID, EndedAt: ended.Truncate(time.Millisecond)},
			{IMEI: a, Ownership: second.Ownership, OrganizationID: d.org.ID},
		})
		last, err := tx.DeviceOwnerships().Last(a)
		if err != nil {
			return err
		}
		wantEqual(t, "the last ownership of "+a, last, second)
		last, err = tx.DeviceOwnerships().Last(b)
		if err != nil {
			return err
		}
		wantEqual(t, "the last ownership of "+b, last, &store.DeviceOwnership{IMEI: b, Ownership: numbers[1],
			OrganizationID: d.org.ID})
		return nil
	})

	// Put replaces what was logged for an IMEI and number.
	other := &store.Organization{Name: "Other", PartnerID: d.p.ID, PartnerIDs: []int64{d.p.ID}, CreatedAt: testTime}
	write(t, e, func(tx store.Records) error {
		if err := tx.Organizations().Insert(other); err != nil {
			return err
		}
		return tx.DeviceOwnerships().Put(&store.DeviceOwnership{IMEI: a, Ownership: second.Ownership,
			OrganizationID: other.ID, EndedAt: testTime})
	})
	read(t, e, func(tx store.Records) error {
		last, err := tx.DeviceOwnerships().Last(a)
		if err != nil {
			return err
		}
		wantEqual(t, "the replaced ownership", last, &store.DeviceOwnership{IMEI: a, Ownership: second.Ownership,
			OrganizationID: other.ID, EndedAt: testTime.Truncate(time.Millisecond)})
		return nil
	})
	// After those Puts, a new number is still greater than every one given
	// before.
	if next := insert(b); next.Ownership <= second.Ownership {
		t.Errorf("ownership %d after %d; want greater", next.Ownership, second.Ownership)
	}
}
