package postgres

import (
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetcam/fleetcam/store"
)

// The copy's side of the directory, the events and the tracks.

var _ = register(map[store.Kind]copyKind{
	store.KindPartners: kindOf(tableList("partners"),
		selected(`SELECT `+partnerColumns+` FROM partners ORDER BY id`, scanned(partnerFields)),
		insertedAs("partners", func(p *store.Partner) *int64 { return &p.ID },
			func(t *tx, p *store.Partner) error { return partners{t}.Insert(p) })),
	store.KindOrganizations: kindOf(tableList("organizations", "organization_partners", "organization_invitations"),
		selected(`SELECT `+organizationColumns+` FROM organizations o ORDER BY o.id`, scanned(organizationFields)),
		insertedAs("organizations", func(o *store.Organization) *int64 { return &o.ID },
			func(t *tx, o *store.Organization) error { return organizations{t}.Insert(o) })),
	store.KindUsers: kindOf(tableList("users"),
		selected(`SELECT `+userColumns+` FROM users ORDER BY id`, scanned(userFields)),
		insertedAs("users", func(u *store.User) *int64 { return &u.ID },
			func(t *tx, u *store.User) error { return users{t}.Insert(u) })),
	store.KindInviteTokens: kindOf(tableList("invite_tokens"),
		selected(`SELECT token_hash, user_id FROM invite_tokens ORDER BY token_hash`,
			func(row pgx.Row) (*store.InviteToken, error) {
				var hash []byte
				r := new(store.InviteToken)
				if err := row.Scan(&hash, &r.UserID); err != nil {
					return nil, err
				}
				if len(hash) != len(r.Hash) {
					return nil, fmt.Errorf("store: an invitation token hash of %d bytes", len(hash))
				}
				r.Hash = [len(r.Hash)]byte(hash)
				return r, nil
			}),
		each(func(t *tx, r *store.InviteToken) error { return inviteTokens{t}.Put(r.Hash, r.UserID) })),
	store.KindGroups: kindOf(tableList("groups"),
		selected(`SELECT `+groupColumns+` FROM groups ORDER BY id`, scanned(groupFields)),
		insertedAs("groups", func(g *store.Group) *int64 { return &g.ID },
			func(t *tx, g *store.Group) error { return groups{t}.Insert(g) })),
	store.KindDevices: kindOf(tableList("devices"),
		selected(`SELECT `+deviceColumns+` FROM devices ORDER BY imei`, scanned(deviceFields)),
		each(func(t *tx, d *store.Device) error { return devices{t}.Insert(d) })),
	store.KindDeviceOwnerships: kindOf(tableList("device_ownerships"),
		selected(`SELECT `+ownershipColumns+` FROM device_ownerships ORDER BY imei, ownership`, scanned(ownershipFields)),
		each(func(t *tx, o *store.DeviceOwnership) error { return deviceOwnerships{t}.Put(o) })),
	store.KindOAuthClients: kindOf(tableList("oauth_clients"),
		selected(`SELECT `+oauthClientColumns+` FROM oauth_clients ORDER BY id`, scanned(oauthClientFields)),
		each(func(t *tx, c *store.OAuthClient) error { return oauthClients{t}.Insert(c) })),

	// The hourly and daily counts of the events are not copied: each
	// batch of events copied in adds its own (copyEvents), under the
	// destination's node.
	store.KindEvents: kindOf(tableList("events", "event_files", "event_comments", "event_hours", "device_event_days"),
		selected(`SELECT `+eventColumns+` FROM events e ORDER BY e.id`,
			func(row pgx.Row) (*store.Event, error) { return scanEvent(row) }),
		putEvents),
	store.KindEventDeviceIDs: kindOf(tableList("event_device_ids"),
		selected(`SELECT `+eventDeviceIDColumns+` FROM event_device_ids ORDER BY imei, device_event_id`,
			scanned(eventDeviceIDFields)),
		copied("event_device_ids", eventDeviceIDColumns, rows(eventDeviceIDArgs))),

	store.KindGPSSamples: kindOf(tableList("gps_samples"),
		selected(`SELECT imei, ownership, `+gpsColumns+` FROM gps_samples ORDER BY imei, sampled_at`,
			scanned(func(s *store.GPSSample) []any { return append([]any{&s.IMEI, &s.Ownership}, gpsFields(&s.Point)...) })),
		copied("gps_samples", gpsRowColumns, rows(func(s *store.GPSSample) []any {
			return gpsArgs(s.IMEI, s.Ownership, s.Point)
		}))),
	store.KindTrips: kindOf(tableList("trips"),
		selected(`SELECT `+tripColumns+`, is_open FROM trips ORDER BY imei, started_at_ms`,
			scanned(func(r *store.StoredTrip) []any { return append(tripFields(&r.Trip), &r.Open) })),
		copied("trips", "id, is_open, "+tripRowColumns, rows(func(r *store.StoredTrip) []any {
			return append([]any{r.ID, r.Open}, tripArgs(&r.Trip)...)
		}))),
	store.KindDeviceTracks: kindOf(tableList("device_tracks"),
		byKey(`SELECT imei FROM device_tracks WHERE imei > $1 ORDER BY imei LIMIT $2`,
			func(t *tx, imei string) (*store.StoredDeviceTrack, error) {
				track, err := deviceTracks{t}.Get(imei)
				if err != nil {
					return nil, err
				}
				return &store.StoredDeviceTrack{IMEI: imei, Track: *track}, nil
			}),
		each(func(t *tx, r *store.StoredDeviceTrack) error { return deviceTracks{t}.Put(r.IMEI, &r.Track) })),
})

// putEvents stores the copy's events, copyBatch at a time, each batch
// with its counts (copyEvents).
func putEvents(t *tx, k store.Kind, recs iter.Seq2[any, error]) (int64, error) {
	return batched(func(t *tx, batch []*store.Event) error { return copyEvents(batch, t.node, txCopier{t}) })(t, k, recs)
}

// copyEvents writes a batch of events, their files and their comments by
// COPY with w, from the arguments eventArgs gives their rows, and adds the
// batch's hourly and daily counts under node (eventcounts.go): the one
// writer of events by COPY, for a copy (putEvents) and a bulk transaction
// (bulk.go), so that every event either stores is counted in its
// transaction.
func copyEvents(batch []*store.Event, node string, w copier) error {
	if len(batch) == 0 {
		return nil
	}
	columns := strings.Split(eventRowColumns, ",")
	for i, c := range columns {
		columns[i] = strings.TrimSpace(c)
	}
	var events, files, comments [][]any
	for _, e := range batch {
		a := eventArgs(e)
		row := []any{e.ID}
		for _, c := range columns {
			row = append(row, a[c])
		}
		events = append(events, row)
		cameras, ids, types := a["file_cameras"].([]int32), a["file_ids"].([]string), a["file_types"].([]string)
		for i := range cameras {
			files = append(files, []any{e.ID, e.Time, i, cameras[i], ids[i], types[i]})
		}
		cids, texts, audiences := a["comment_ids"].([]int64), a["comment_texts"].([]string), a["comment_audiences"].([]string)
		authors, emails, ats := a["comment_authors"].([]int64), a["comment_emails"].([]string), a["comment_times"].([]time.Time)
		for i := range cids {
			comments = append(comments, []any{cids[i], e.ID, e.Time, texts[i], audiences[i], nullZero(authors[i]),
				nullZero(emails[i]), ats[i]})
		}
	}
	for _, table := range []struct {
		name, columns string
		rows          [][]any
	}{
		{"events", "id, " + eventRowColumns, events},
		{"event_files", "event_id, event_time, position, camera_id, file_id, file_type", files},
		{"event_comments", "id, event_id, event_time, comment, audience, created_by_id, created_by_email, created_at", comments},
	} {
		if err := w.copyRows(table.name, table.columns, table.rows); err != nil {
			return err
		}
	}
	return w.run(countEventsSQL, countEventsArgs(batch, node)...)
}
