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
	keepsToTheIndex(t, viewPoolConfig(e.pool.Config()), "", []keyedRead{
		{"authRows", authRows.sql, planIMEIs},
		{"viewRows", viewRows.sql, planIMEIs},
		{"viewQueued", viewQueued, planIMEIs},
		{"prefetchAssignments", prefetchAssignments, planIMEIs},
		{"viewCredentials", viewCredentials.sql, planIMEIs},
		{"viewActiveOrgs", viewActiveOrgs, planIMEIs},
		{"viewActiveDrivers", viewActiveDrivers, planIMEIs},
	})
}

// The same holds for a group commit's reads ahead over the array of its
// devices, on the engine's pool with the settings they run with
// (readAheadPlans), which keep their generic plans.
func TestReadAheadKeepsToTheIndex(t *testing.T) {
	t.Parallel()
	e := openPrepared(t)
	keepsToTheIndex(t, e.pool.Config(), readAheadPlans, []keyedRead{
		{"prefetchRows", prefetchRows.sql, planIMEIs},
		{"prefetchGPS", prefetchGPS, planIMEIs + `, '2026-11-01T00:00:00Z'::timestamptz`},
	})
}

// A keyedRead is a statement and the arguments of an execution of it, as
// EXECUTE takes them.
type keyedRead struct{ name, sql, args string }

// planIMEIs are the devices a keyedRead's execution reads.
const planIMEIs = `'{356938000000001,356938000000002}'::text[]`

// keepsToTheIndex plans each read on one connection of cfg, with the
// tables analysed empty and, when settings is set, that statement run
// first in the read's transaction; and fails the test for every scan of
// a plan that does not find its rows by key.
func keepsToTheIndex(t *testing.T, cfg *pgxpool.Config, settings string, reads []keyedRead) {
	ctx := t.Context()
	cfg = cfg.Copy()
	cfg.MaxConns, cfg.MinConns = 1, 0
	cfg.AfterConnect, cfg.PrepareConn = nil, nil
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
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE)`); err != nil {
		t.Fatal(err)
	}
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if settings != "" {
				if _, err := tx.Exec(ctx, settings); err != nil {
					t.Fatal(err)
				}
			}
			// PREPARE takes the parameters' types from the statement's
			// casts, and EXECUTE plans it as the connection then keeps it.
			if _, err := tx.Exec(ctx, `PREPARE `+r.name+` AS `+r.sql); err != nil {
				t.Fatal(err)
			}
			var plan []byte
			if err := tx.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE `+r.name+` (`+r.args+`)`,
				pgx.QueryExecModeSimpleProtocol).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			var nodes []struct{ Plan planNode }
			if err := json.Unmarshal(plan, &nodes); err != nil {
				t.Fatal(err)
			}
			for _, bad := range nodes[0].Plan.unkeyed() {
				t.Errorf("%s reads %s", r.name, bad)
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
