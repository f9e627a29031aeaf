package store

// Hourly event counts: an organization's event page counts its window from
// whole hours instead of visiting every event of it. An engine that needs
// them keeps them with the events; a store written before the counts
// existed got them from migration 1.

// backfillEventHours counts the events of a store that has no hourly
// counts yet (migration 1). Running it again changes nothing.
func backfillEventHours(tx *Tx) error { return tx.rec.Events().BackfillHourlyCounts() }
