package postgres

import (
	"crypto/sha256"
	"errors"

	"github.com/fleetcam/fleetcam/store"
)

// users are the users table, whose e-mails are unique.
type users struct{ t *tx }

// Users implements store.DirectoryRecords.
func (t *tx) Users() store.UserRecords { return users{t} }

// userColumns are the columns userFields scans.
const userColumns = `id, email, name, password_hash, partner_id, organization_id, access_level,
	created_at, invite_expires_at, measurement, time_format, token_generation, external_organization_ids`

// userFields are the scan targets of userColumns in u.
func userFields(u *store.User) []any {
	return []any{&u.ID, &u.Email, &u.Name, &u.PasswordHash, zeroID{&u.PartnerID}, zeroID{&u.OrganizationID},
		&u.AccessLevel, zeroTime{&u.CreatedAt}, zeroTime{&u.InviteExpiresAt},
		&u.Settings.Measurement, &u.Settings.TimeFormat, &u.TokenGeneration, &u.ExternalOrganizationIDs}
}

// externalIDs is ids as a parameter: NULL when there are none, which
// reads back as nil.
func externalIDs(ids []int64) []int64 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// passwordHash is h as a parameter: NULL when there is none.
func passwordHash(h []byte) []byte {
	if len(h) == 0 {
		return nil
	}
	return h
}

// Get implements store.UserRecords.
func (r users) Get(id int64) (*store.User, error) {
	return getRecord(r.t, `SELECT `+userColumns+` FROM users WHERE id = $1`, userFields, id)
}

// ByEmail implements store.UserRecords.
func (r users) ByEmail(email string) (*store.User, error) {
	u, err := getRecord(r.t, `SELECT `+userColumns+` FROM users WHERE email = $1`, userFields, email)
	return u, store.NotFoundAs(err, "user %s", email)
}

// Insert implements store.UserRecords: ids are the table's identity. An
// e-mail in use inserts nothing, which leaves the transaction usable.
func (r users) Insert(u *store.User) error {
	err := getOne(r.t, `INSERT INTO users (email, name, password_hash, partner_id, organization_id, access_level,
			created_at, invite_expires_at, measurement, time_format, token_generation, external_organization_ids)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (email) DO NOTHING RETURNING id`,
		[]any{&u.ID}, u.Email, u.Name, passwordHash(u.PasswordHash), nullID(u.PartnerID), nullID(u.OrganizationID),
		u.AccessLevel, u.CreatedAt, nullTime(u.InviteExpiresAt), u.Settings.Measurement, u.Settings.TimeFormat, u.TokenGeneration,
		externalIDs(u.ExternalOrganizationIDs))
	if errors.Is(err, store.ErrNotFound) {
		return store.Conflict("user email %s already exists", u.Email)
	}
	return err
}

// Put implements store.UserRecords. The e-mail stays as inserted;
// ErrNotFound when there is no user u.ID.
func (r users) Put(u *store.User) error {
	tag, err := r.t.exec(`UPDATE users SET name = $2, password_hash = $3, partner_id = $4, organization_id = $5,
			access_level = $6, created_at = $7, invite_expires_at = $8, measurement = $9, time_format = $10,
			token_generation = $11, external_organization_ids = $12
		WHERE id = $1`,
		u.ID, u.Name, passwordHash(u.PasswordHash), nullID(u.PartnerID), nullID(u.OrganizationID),
		u.AccessLevel, u.CreatedAt, nullTime(u.InviteExpiresAt), u.Settings.Measurement, u.Settings.TimeFormat, u.TokenGeneration,
		externalIDs(u.ExternalOrganizationIDs))
	return affected(tag, err, "user %d", u.ID)
}

// List implements store.UserRecords.
func (r users) List(f store.UserFilter, p store.Page) ([]store.User, int, error) {
	var w where
	if f.PartnerID != 0 {
		w.and("partner_id = " + w.arg(f.PartnerID))
	}
	if f.OrganizationID != 0 {
		w.and("organization_id = " + w.arg(f.OrganizationID))
	}
	if f.PartnerUsersOnly {
		w.and("organization_id IS NULL")
	}
	if f.ExternalOrganizationID != 0 {
		w.and(w.arg(f.ExternalOrganizationID) + " = ANY (external_organization_ids)")
	}
	return listPage(r.t, userColumns, "users", &w, "id", p, userFields)
}

// inviteTokens are the invite_tokens table.
type inviteTokens struct{ t *tx }

// InviteTokens implements store.DirectoryRecords.
func (t *tx) InviteTokens() store.InviteTokenRecords { return inviteTokens{t} }

// UserID implements store.InviteTokenRecords.
func (r inviteTokens) UserID(hash [sha256.Size]byte) (int64, error) {
	var id int64
	err := getOne(r.t, `SELECT user_id FROM invite_tokens WHERE token_hash = $1`, []any{&id}, hash[:])
	return id, err
}

// Put implements store.InviteTokenRecords.
func (r inviteTokens) Put(hash [sha256.Size]byte, userID int64) error {
	_, err := r.t.exec(`INSERT INTO invite_tokens (token_hash, user_id) VALUES ($1, $2)
		ON CONFLICT (token_hash) DO UPDATE SET user_id = EXCLUDED.user_id`, hash[:], userID)
	return err
}

// Delete implements store.InviteTokenRecords.
func (r inviteTokens) Delete(hash [sha256.Size]byte) error {
	_, err := r.t.exec(`DELETE FROM invite_tokens WHERE token_hash = $1`, hash[:])
	return err
}

// Delete implements store.UserRecords; the user's invitation tokens go
// with it (ON DELETE CASCADE).
func (r users) Delete(id int64) error {
	tag, err := r.t.exec(`DELETE FROM users WHERE id = $1`, id)
	return affected(tag, err, "user %d", id)
}

// DeleteUser implements store.InviteTokenRecords.
func (r inviteTokens) DeleteUser(userID int64) error {
	_, err := r.t.exec(`DELETE FROM invite_tokens WHERE user_id = $1`, userID)
	return err
}
