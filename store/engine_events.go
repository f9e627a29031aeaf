package store

// EventRecords are the record sets of events, their comments and their hourly counts, whose rules are in events.go, eventcounts.go, eventquery.go, eventrules.go, driverevents.go.
type EventRecords interface{}
