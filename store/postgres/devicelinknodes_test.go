package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetcam/fleetcam/store"
)

// TestDeviceLinkNodesUseTheirIndex: listing the nodes and marking one
// node's links offline read device_links_node, not every link.
func TestDeviceLinkNodesUseTheirIndex(t *testing.T) {
	t.Parallel()
	f := seedDeviceState(t)
	f.view(func(tx *tx) error {
		if _, err := tx.exec(`SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		for name, query := range map[string]string{
			"ConnectedNodes": connectedNodesSQL,
			"MarkOffline": `UPDATE device_links SET presence = 'offline' WHERE ` + linkOfANode + ` AND ` + linkNode +
				` = 'node-a' AND starts_with(connection_id, 'node-a/')`,
		} {
			rows, err := tx.pg.Query(tx.ctx, `EXPLAIN `+query)
			if err != nil {
				return err
			}
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					return err
				}
				plan = append(plan, line)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if p := strings.Join(plan, "\n"); !strings.Contains(p, "device_links_node") {
				t.Errorf("%s does not read device_links_node:\n%s", name, p)
			}
		}
		return nil
	})
	var marked []store.OfflineLink
	f.update(func(tx *tx) (err error) {
		marked, err = tx.DeviceLinks().(deviceLinks).MarkOffline(time.Now(), "node-z/")
		return err
	})
	if len(marked) != 0 {
		t.Errorf("marked %v, links of a node that has none", marked)
	}
}
