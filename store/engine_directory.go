package store

// DirectoryRecords are the record sets of partners, users, organizations, invitations, groups, devices and their ownerships, whose rules are in organizations.go, users.go, invitations.go, devices.go, ownership.go.
type DirectoryRecords interface{}
