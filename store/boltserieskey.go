package store

import "time"

// sessionKey is the key of a record of a device series still kept here
// (trips, data usage): imei, 0, unix ms. It goes with the last code that
// uses it.
func sessionKey(imei string, t time.Time) []byte {
	return append(compositeKey(imei, ""), itob(max(t.UnixMilli(), 0))...)
}
