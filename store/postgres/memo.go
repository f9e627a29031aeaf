package postgres

import "time"

// memo keeps, for one transaction, what it read of records that are read
// by nearly every device message and written rarely: an organization's
// default settings and which webhook types it receives. A group commit
// runs the messages of many devices of few organizations in one
// transaction, and each would otherwise read the same rows again. Within
// a transaction a row reads the same until the transaction writes it
// (REPEATABLE READ and SERIALIZABLE), so the memo is exact as long as
// every write of these records forgets what it kept: their Put methods do.
// It is never shared between transactions.
type memo struct {
	orgSettings map[int64]orgSettingsRow
	receivers   map[receiverKey]bool
}

// orgSettingsRow is the row of an organization's settings as read, decoded
// afresh for each reader (the store may change what it is given); found
// is false when the organization has none.
type orgSettingsRow struct {
	found                                   bool
	forbidLegacy                            bool
	device, events, privacy, modes, control []byte
	updatedAt                               time.Time
}

// receiverKey is an organization and a webhook type.
type receiverKey struct {
	org int64
	typ string
}
