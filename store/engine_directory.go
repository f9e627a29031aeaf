package store

import "crypto/sha256"

// DirectoryRecords are the record sets of partners, users, organizations, invitations, groups, devices and their ownerships, and OAuth clients, whose rules are in organizations.go, users.go, invitations.go, devices.go, ownership.go, oauthclients.go.
type DirectoryRecords interface {
	// Each accessor returns the records of one type in this transaction.
	Partners() PartnerRecords
	Users() UserRecords
	InviteTokens() InviteTokenRecords
	Organizations() OrganizationRecords
	Groups() GroupRecords
	Devices() DeviceRecords
	DeviceOwnerships() DeviceOwnershipRecords
	OAuthClients() OAuthClientRecords
}

// PartnerRecords are the partners, by id.
type PartnerRecords interface {
	// Get returns the partner with id; ErrNotFound when there is none.
	Get(id int64) (*Partner, error)
	// Insert stores the new partner p under a new id, greater than every
	// partner id given before, which it sets in p.ID.
	Insert(p *Partner) error
	// Count is the number of partners.
	Count() (int, error)
}

// UserRecords are the users, by id and by e-mail. A user's e-mail is unique
// and never changes.
type UserRecords interface {
	// Get returns the user with id; ErrNotFound when there is none.
	Get(id int64) (*User, error)
	// ByEmail returns the user whose Email is email (as the store normalised
	// it); ErrNotFound when there is none.
	ByEmail(email string) (*User, error)
	// Insert stores the new user u under a new id, greater than every user
	// id given before, which it sets in u.ID. An e-mail another user has is
	// ErrConflict.
	Insert(u *User) error
	// Put replaces the stored user u.ID with u, whose Email is the one it
	// was inserted with; ErrNotFound when there is none.
	Put(u *User) error
	// List returns the page p of the users f matches, in id order, and how
	// many f matches in all.
	List(f UserFilter, p Page) ([]User, int, error)
	// Delete deletes the user id, its e-mail and its open invitation
	// tokens; ErrNotFound when there is none.
	Delete(id int64) error
}

// InviteTokenRecords map the SHA-256 hash of each open invitation token to
// the user it was issued to. The tokens themselves are never stored.
type InviteTokenRecords interface {
	// UserID returns the id of the user the token of hash was issued to;
	// ErrNotFound when no open token has hash.
	UserID(hash [sha256.Size]byte) (int64, error)
	// Put records that the token of hash was issued to user userID.
	Put(hash [sha256.Size]byte, userID int64) error
	// Delete forgets the token of hash; forgetting one that is not recorded
	// is no error.
	Delete(hash [sha256.Size]byte) error
	// DeleteUser forgets every token issued to user userID.
	DeleteUser(userID int64) error
}

// OrganizationRecords are the organizations, by id.
type OrganizationRecords interface {
	// Get returns the organization with id; ErrNotFound when there is none.
	Get(id int64) (*Organization, error)
	// Insert stores the new organization o under a new id, greater than
	// every organization id given before, which it sets in o.ID. A partner
	// named twice in PartnerIDs is kept once, at its first place, and an
	// empty PartnerIDs reads as nil.
	Insert(o *Organization) error
	// Put replaces the stored organization o.ID with o, its PartnerIDs as
	// Insert keeps them; ErrNotFound when there is none.
	Put(o *Organization) error
	// List returns the page p of the organizations f matches, in id order,
	// and how many f matches in all.
	List(f OrganizationFilter, p Page) ([]Organization, int, error)
}

// GroupRecords are the device groups, by id.
type GroupRecords interface {
	// Get returns the group with id; ErrNotFound when there is none.
	Get(id int64) (*Group, error)
	// Insert stores the new group g under a new id, greater than every group
	// id given before, which it sets in g.ID.
	Insert(g *Group) error
	// List returns the page p of the groups of organization orgID, in id
	// order, and how many it has in all.
	List(orgID int64, p Page) ([]Group, int, error)
	// Put replaces the stored group g.ID with g, which stays in its
	// organization; ErrNotFound when there is none.
	Put(g *Group) error
	// Delete deletes the group id, which no device is in any more;
	// ErrNotFound when there is none.
	Delete(id int64) error
}

// DeviceRecords are the devices, by IMEI, and the devices of each
// organization.
type DeviceRecords interface {
	// Get returns the device with imei; ErrNotFound when there is none.
	Get(imei string) (*Device, error)
	// Stamp returns a fingerprint of the stored record of imei that changes
	// whenever the record does, and costs far less than Get: a caller
	// holding a decoded copy tells with it whether the copy is current.
	// ErrNotFound when there is no device imei.
	Stamp(imei string) (uint64, error)
	// Insert stores the new device d in its organization; a device with
	// d.IMEI already stored is ErrConflict.
	Insert(d *Device) error
	// Put replaces the stored device d.IMEI with d, which stays in the
	// organization it was inserted in; ErrNotFound when there is none.
	Put(d *Device) error
	// Delete deletes the device imei from its organization; ErrNotFound
	// when there is none.
	Delete(imei string) error
	// List returns the page p of the devices f matches, in IMEI order, and
	// how many f matches in all.
	List(f DeviceFilter, p Page) ([]Device, int, error)
	// OrganizationIMEIs returns the IMEIs of every device of organization
	// orgID, in IMEI order.
	OrganizationIMEIs(orgID int64) ([]string, error)
}

// DeviceOwnershipRecords are the ownership log: every stay of each IMEI in
// an organization (ownership.go).
type DeviceOwnershipRecords interface {
	// Insert logs the new ownership o under a new number, greater than every
	// ownership number given before to any IMEI, which it sets in
	// o.Ownership.
	Insert(o *DeviceOwnership) error
	// Put records o under its IMEI and number, replacing what was logged
	// for them.
	Put(o *DeviceOwnership) error
	// Last returns the ownership of imei with the greatest number;
	// ErrNotFound when none is logged.
	Last(imei string) (*DeviceOwnership, error)
	// List returns every ownership of imei logged, by number.
	List(imei string) ([]DeviceOwnership, error)
}

// OAuthClientRecords are the OAuth clients, by id.
type OAuthClientRecords interface {
	// Get returns the client with id; ErrNotFound when there is none.
	Get(id string) (*OAuthClient, error)
	// Insert stores the new client c; a client with c.ID already stored is
	// ErrConflict.
	Insert(c *OAuthClient) error
	// Put replaces the stored client c.ID with c; ErrNotFound when there is
	// none.
	Put(c *OAuthClient) error
	// Delete deletes the client id; ErrNotFound when there is none.
	Delete(id string) error
	// List returns the clients f selects, in id order.
	List(f OAuthClientFilter) ([]OAuthClient, error)
}
