package bolt

import (
	"crypto/sha256"

	"github.com/fleetcam/fleetcam/store"
)

// partners are the partners, JSON under their 8-byte id.
type partners struct{ t *tx }

// Partners implements store.DirectoryRecords.
func (t *tx) Partners() store.PartnerRecords { return partners{t} }

// Get implements store.PartnerRecords.
func (r partners) Get(id int64) (*store.Partner, error) {
	return lookupJSON(r.t.bucket(bucketPartners), itob(id), store.Partner{})
}

// Insert implements store.PartnerRecords: ids are the bucket's sequence.
func (r partners) Insert(p *store.Partner) error {
	if err := r.t.drawID(bucketPartners, &p.ID); err != nil {
		return err
	}
	return r.put(p)
}

// put stores p under its id.
func (r partners) put(p *store.Partner) error {
	return putJSON(r.t.bucket(bucketPartners), itob(p.ID), p)
}

// Count implements store.PartnerRecords.
func (r partners) Count() (int, error) { return r.t.bucket(bucketPartners).Stats().KeyN, nil }

// users are the users, JSON under their 8-byte id, and the user_emails
// index: the user's id under its normalised e-mail.
type users struct{ t *tx }

// Users implements store.DirectoryRecords.
func (t *tx) Users() store.UserRecords { return users{t} }

// Get implements store.UserRecords.
func (r users) Get(id int64) (*store.User, error) {
	return lookupJSON(r.t.bucket(bucketUsers), itob(id), store.User{})
}

// ByEmail implements store.UserRecords.
func (r users) ByEmail(email string) (*store.User, error) {
	id := r.t.bucket(bucketUserEmails).Get([]byte(email))
	if id == nil {
		return nil, store.NotFound("user %s", email)
	}
	return r.Get(btoi(id))
}

// Insert implements store.UserRecords: ids are the bucket's sequence.
func (r users) Insert(u *store.User) error {
	if r.t.bucket(bucketUserEmails).Get([]byte(u.Email)) != nil {
		return store.Conflict("user email %s already exists", u.Email)
	}
	if err := r.t.drawID(bucketUsers, &u.ID); err != nil {
		return err
	}
	return r.put(u)
}

// put stores the new user u under its id, with its e-mail's index entry;
// an e-mail another user has is ErrConflict.
func (r users) put(u *store.User) error {
	emails := r.t.bucket(bucketUserEmails)
	if emails.Get([]byte(u.Email)) != nil {
		return store.Conflict("user email %s already exists", u.Email)
	}
	if err := emails.Put([]byte(u.Email), itob(u.ID)); err != nil {
		return err
	}
	return putJSON(r.t.bucket(bucketUsers), itob(u.ID), u)
}

// Put implements store.UserRecords.
func (r users) Put(u *store.User) error {
	return replaceJSON(r.t.bucket(bucketUsers), itob(u.ID), u, "user %d", u.ID)
}

// List implements store.UserRecords. It decodes every user.
func (r users) List(f store.UserFilter, p store.Page) ([]store.User, int, error) {
	return filterJSON(r.t.bucket(bucketUsers), f.Match, p)
}

// inviteTokens are the invite_tokens bucket: the 8-byte user id under the
// 32-byte token hash.
type inviteTokens struct{ t *tx }

// InviteTokens implements store.DirectoryRecords.
func (t *tx) InviteTokens() store.InviteTokenRecords { return inviteTokens{t} }

// UserID implements store.InviteTokenRecords.
func (r inviteTokens) UserID(hash [sha256.Size]byte) (int64, error) {
	id := r.t.bucket(bucketInviteTokens).Get(hash[:])
	if id == nil {
		return 0, store.NotFound("")
	}
	return btoi(id), nil
}

// Put implements store.InviteTokenRecords.
func (r inviteTokens) Put(hash [sha256.Size]byte, userID int64) error {
	return r.t.bucket(bucketInviteTokens).Put(hash[:], itob(userID))
}

// Delete implements store.InviteTokenRecords.
func (r inviteTokens) Delete(hash [sha256.Size]byte) error {
	return r.t.bucket(bucketInviteTokens).Delete(hash[:])
}

// Delete implements store.UserRecords.
func (r users) Delete(id int64) error {
	u, err := r.Get(id)
	if err != nil {
		return err
	}
	if err := (inviteTokens{r.t}).DeleteUser(id); err != nil {
		return err
	}
	if err := r.t.bucket(bucketUserEmails).Delete([]byte(u.Email)); err != nil {
		return err
	}
	return r.t.bucket(bucketUsers).Delete(itob(id))
}

// DeleteUser implements store.InviteTokenRecords. Tokens are not indexed by
// user: it reads every open token.
func (r inviteTokens) DeleteUser(userID int64) error {
	b := r.t.bucket(bucketInviteTokens)
	var hashes [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if btoi(v) == userID {
			hashes = append(hashes, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, _, err = deleteKeys(b, hashes, nil)
	return err
}
