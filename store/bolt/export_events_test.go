package bolt

import "github.com/fleetcam/fleetcam/store"

// WalkOrgEvents answers an organization's event query the slow way,
// walking every index entry of its window without the hourly counts.
func WalkOrgEvents(rec store.Records, org int64, f store.OrgEventFilter, p store.Page) ([]store.Event, int, error) {
	s := events{rec.(*tx)}
	return s.walkOrg(org, f, orgEventMatch(f), p)
}
