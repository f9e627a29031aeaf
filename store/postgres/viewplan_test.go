package postgres

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Every read of a view finds its rows by key, whatever its connection's
// plan was made on: planned while the tables of a device's state were
// empty (a new fleet's, or those a bulk load had just analysed) and kept
// by the connection, each read still probes an index by its keys, where
// a scan of a whole table, or of a whole index, would read every device's
// row at every view once the fleet had filled it.
func TestViewsKeepToTheIndex(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	ctx := t.Context()
	cfg := viewPoolConfig(e.pool.Config())
	cfg.MaxConns, cfg.MinConns = 1, 0
	one, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	conn, err := one.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Analysed empty, as the planner then takes them to be.
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) devices, device_links, device_settings, driver_assignments, drivers,
		queued_commands, device_credentials, organizations`); err != nil {
		t.Fatal(err)
	}
	for name, sql := range map[string]string{
		"authRows":            authRows.sql,
		"viewRows":            viewRows.sql,
		"viewQueued":          viewQueued,
		"prefetchAssignments": prefetchAssignments,
		"viewCredentials":     viewCredentials.sql,
		"viewActiveOrgs":      viewActiveOrgs,
		"viewActiveDrivers":   viewActiveDrivers,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := conn.Exec(ctx, `PREPARE `+name+` (text[]) AS `+sql); err != nil {
				t.Fatal(err)
			}
			// The connection's generic plan, as its views run it.
			var plan []byte
			if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE `+name+` ('{356938000000001,356938000000002}')`,
				pgx.QueryExecModeSimpleProtocol).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			var nodes []struct{ Plan planNode }
			if err := json.Unmarshal(plan, &nodes); err != nil {
				t.Fatal(err)
			}
			for _, bad := range nodes[0].Plan.unkeyed() {
				t.Errorf("%s reads %s", name, bad)
			}
		})
	}
}

// planNode is a node of a plan as EXPLAIN (FORMAT JSON) writes it.
type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	Index     string     `json:"Index Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
}

// unkeyed describes each scan of the plan that does not find its rows by
// key: a sequential scan, or an index scan without an index condition.
func (n planNode) unkeyed() []string {
	var out []string
	switch n.NodeType {
	case "Seq Scan":
		out = append(out, fmt.Sprintf("all of %s", n.Relation))
	case "Index Scan", "Index Only Scan", "Bitmap Index Scan":
		if n.IndexCond == "" {
			out = append(out, fmt.Sprintf("all of index %s", n.Index))
		}
	}
	for _, c := range n.Plans {
		out = append(out, c.unkeyed()...)
	}
	return out
}
