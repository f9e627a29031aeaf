package postgres

import (
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetcam/fleetcam/store"
)

// auxCameras are the aux_camera_lists rows (the devices whose cameras were
// ever stored) and their aux_cameras rows, by position.
type auxCameras struct{ t *tx }

// AuxCameras implements store.DeviceStateRecords.
func (t *tx) AuxCameras() store.AuxCameraRecords { return auxCameras{t} }

// Get implements store.AuxCameraRecords: a list with no camera is an empty
// slice, no list store.ErrNotFound. A group commit reads the lists of its
// devices ahead (Prefetch).
func (r auxCameras) Get(imei string) ([]store.AuxCamera, error) {
	m, ok := r.t.memo.aux[imei]
	if !ok {
		rows, err := r.t.pg.Query(r.t.ctx, `SELECT l.imei, `+auxCameraColumns+`
			FROM aux_camera_lists l LEFT JOIN aux_cameras c ON c.imei = l.imei
			WHERE l.imei = $1 ORDER BY c.position`, imei)
		if err != nil {
			return nil, classify(err)
		}
		lists, err := scanAuxCameras(rows)
		if err != nil {
			return nil, err
		}
		m = lists[imei]
	}
	if !m.listed {
		return nil, store.NotFound("")
	}
	return slices.Clone(m.cams), nil
}

// auxMemo is a device's list of auxiliary cameras as read: listed is
// false when it has none.
type auxMemo struct {
	listed bool
	cams   []store.AuxCamera // not nil when listed
}

// auxCameraColumns are the columns of a list's cameras, of aux_cameras c
// joined to aux_camera_lists l (NULL for a list without cameras).
const auxCameraColumns = `c.camera_id, c.serial_number, c.ssid, c.kind, c.paired, c.connected, c.paired_at, c.changed_at`

// prefetchAuxCameras reads the auxiliary camera lists of the devices of $1.
const prefetchAuxCameras = `SELECT l.imei, ` + auxCameraColumns + `
	FROM aux_camera_lists l LEFT JOIN aux_cameras c ON c.imei = l.imei
	WHERE l.imei = ANY($1) ORDER BY l.imei, c.position`

// scanAuxCameras reads rows of the IMEI and auxCameraColumns, by position
// within each device, into the lists they show, and closes rows.
func scanAuxCameras(rows pgx.Rows) (map[string]auxMemo, error) {
	defer rows.Close()
	lists := map[string]auxMemo{}
	for rows.Next() {
		var imei string
		var id *int
		var serial, ssid, kind *string
		var paired, connected *bool
		var pairedAt, changedAt time.Time
		if err := rows.Scan(&imei, &id, &serial, &ssid, &kind, &paired, &connected, zeroTime{&pairedAt}, zeroTime{&changedAt}); err != nil {
			return nil, classify(err)
		}
		m := lists[imei]
		m.listed = true
		if m.cams == nil {
			m.cams = []store.AuxCamera{}
		}
		if id != nil { // nil: the list is empty
			m.cams = append(m.cams, store.AuxCamera{CameraID: *id, SerialNumber: *serial, SSID: *ssid, Kind: *kind,
				Paired: *paired, Connected: *connected, PairedAt: pairedAt, ChangedAt: changedAt})
		}
		lists[imei] = m
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	return lists, nil
}

// readAuxCamerasAhead keeps the lists prefetchAuxCameras answers for the
// devices want.
func (t *tx) readAuxCamerasAhead(br pgx.BatchResults, want []string) error {
	rows, err := br.Query()
	if err != nil {
		return classify(err)
	}
	lists, err := scanAuxCameras(rows)
	if err != nil {
		return err
	}
	if t.memo.aux == nil {
		t.memo.aux = map[string]auxMemo{}
	}
	for _, imei := range want {
		t.memo.aux[imei] = lists[imei]
	}
	return nil
}

// Put implements store.AuxCameraRecords: the list row, then the cameras
// replaced, in one round trip.
func (r auxCameras) Put(imei string, cams []store.AuxCamera) error {
	delete(r.t.memo.aux, imei)
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO aux_camera_lists (imei) VALUES ($1) ON CONFLICT DO NOTHING`, imei)
	b.Queue(`DELETE FROM aux_cameras WHERE imei = $1`, imei)
	if len(cams) > 0 {
		n := len(cams)
		ids, serials, ssids, kinds := make([]int32, n), make([]string, n), make([]string, n), make([]string, n)
		paired, connected := make([]bool, n), make([]bool, n)
		pairedAt, changedAt := make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
		for i, c := range cams {
			ids[i], serials[i], ssids[i], kinds[i], paired[i], connected[i] =
				int32(c.CameraID), c.SerialNumber, c.SSID, c.Kind, c.Paired, c.Connected
			pairedAt[i], changedAt[i] = nullTime(c.PairedAt), nullTime(c.ChangedAt)
		}
		b.Queue(`INSERT INTO aux_cameras (imei, position, camera_id, serial_number, ssid, kind, paired, connected,
				paired_at, changed_at)
			SELECT $1, c.n, c.camera_id, c.serial_number, c.ssid, c.kind, c.paired, c.connected, c.paired_at, c.changed_at
			FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::boolean[],
				$8::timestamptz[], $9::timestamptz[]) WITH ORDINALITY
				AS c (camera_id, serial_number, ssid, kind, paired, connected, paired_at, changed_at, n)`,
			imei, ids, serials, ssids, kinds, paired, connected, pairedAt, changedAt)
	}
	return missingDevice(r.t.sendBatch(b), imei)
}

// Delete implements store.AuxCameraRecords; the cameras go with the list.
func (r auxCameras) Delete(imei string) error {
	delete(r.t.memo.aux, imei)
	_, err := r.t.exec(`DELETE FROM aux_camera_lists WHERE imei = $1`, imei)
	return err
}
