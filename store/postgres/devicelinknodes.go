package postgres

import (
	"strings"
	"time"

	"github.com/fleetcam/fleetcam/store"
	"github.com/jackc/pgx/v5"
)

var _ store.DeviceLinkNodes = deviceLinks{}

// linkNode is the node part of a link's connection id, as the index
// device_links_node (migration 00015) has it, and the links it covers.
const (
	linkNode     = `split_part(connection_id, '/', 1) COLLATE "C"`
	linkOfANode  = `presence <> 'offline' AND strpos(connection_id, '/') > 0`
	linkNodeNext = `SELECT ` + linkNode + ` FROM device_links WHERE ` + linkOfANode

	connectedNodesSQL = `WITH RECURSIVE nodes (node) AS (
			(` + linkNodeNext + ` ORDER BY 1 LIMIT 1)
			UNION ALL
			SELECT (` + linkNodeNext + ` AND ` + linkNode + ` > nodes.node ORDER BY 1 LIMIT 1)
			FROM nodes WHERE nodes.node IS NOT NULL)
		SELECT node FROM nodes WHERE node IS NOT NULL`
)

// ConnectedNodes implements store.DeviceLinkNodes: a loose index scan of
// device_links_node, one index probe per node, however many links each has.
func (r deviceLinks) ConnectedNodes() ([]string, error) {
	return collect(r.t, pgx.RowTo[string], connectedNodesSQL)
}

// MarkOffline implements store.DeviceLinkNodes in one statement; a prefix
// of the form "<node>/" reads only that node's links from
// device_links_node. The links are locked in the order of their devices,
// the order in which a group commit writes links too (inKeyOrder), so
// that marking a node's devices offline while they reconnect through
// other nodes waits for those nodes' commits, or they for it, and never
// deadlocks. It returns each link with the presence it had.
func (r deviceLinks) MarkOffline(t time.Time, prefix string) ([]store.OfflineLink, error) {
	r.t.forgetTable(tableDeviceLinks)
	where := `presence <> 'offline' AND starts_with(connection_id, $2)`
	args := []any{t.UTC(), prefix}
	if node, rest, found := strings.Cut(prefix, "/"); found && rest == "" {
		where = linkOfANode + ` AND ` + linkNode + ` = $3 AND starts_with(connection_id, $2)`
		args = append(args, node)
	}
	return collect(r.t, scanFields(func(l *store.OfflineLink) []any { return []any{&l.IMEI, &l.Was} }),
		`UPDATE device_links d SET presence = 'offline', connection_id = '', disconnected_at = $1
		FROM (SELECT imei, presence FROM device_links WHERE `+where+` ORDER BY imei FOR UPDATE) old
		WHERE d.imei = old.imei RETURNING d.imei, old.presence`, args...)
}
