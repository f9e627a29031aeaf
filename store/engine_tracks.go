package store

// TrackRecords are the record sets of GPS samples, device tracks, trips, hotspots and device and organization settings, whose rules are in gps.go, geofences.go, trips.go, hotspot.go, settings.go, privacy.go.
type TrackRecords interface{}
