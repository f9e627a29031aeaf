package store

// DeviceStateRecords are the record sets of media files, auxiliary cameras, billing, data usage and device links, credentials and queued commands, whose rules are in media.go, mediaretention.go, auxcameras.go, billing.go, datausage.go, devicelink.go.
type DeviceStateRecords interface{}
