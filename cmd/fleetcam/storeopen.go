package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/postgres"
)

// openConfiguredStore opens the store the configuration names: PostgreSQL
// when store.postgresURL is set, applying its schema migrations, else the
// bbolt file in the data dir. A server's PostgreSQL pools start warm: its
// first devices may arrive at once.
func openConfiguredStore(ctx context.Context, cfg configs.Config) (*store.DB, error) {
	if cfg.Store.PostgresURL != "" {
		o := postgresOptions(cfg)
		o.Warm = true
		return postgres.Open(ctx, cfg.Store.PostgresURL, o, store.Options{})
	}
	return boltstore.Open(filepath.Join(cfg.DataDir, storeFile), store.Options{})
}

func postgresOptions(cfg configs.Config) postgres.Options {
	return postgres.Options{StatementTimeout: cfg.Store.StatementTimeout, MaxConns: int32(cfg.Store.MaxConns),
		Node: cfg.Cluster.NodeID}
}

// migrate is `fleetcam migrate`: it brings the configured store up to date
// (the PostgreSQL schema migrations, then the store's own) and exits,
// saying what it applied. Running it again applies nothing; processes that
// run it at once wait for each other.
func migrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig("migrate", args, getenv)
	if err != nil {
		return err
	}
	if cfg.Store.PostgresURL == "" {
		path := filepath.Join(cfg.DataDir, storeFile)
		db, err := boltstore.Open(path, store.Options{})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "bbolt store %s is up to date\n", path)
		return db.Close()
	}
	e, err := postgres.OpenEngine(ctx, cfg.Store.PostgresURL, postgresOptions(cfg))
	if err != nil {
		return err
	}
	applied, err := e.Migrate(ctx)
	if err != nil {
		e.Close()
		return err
	}
	for _, m := range applied {
		fmt.Fprintf(stdout, "applied %s\n", m)
	}
	db, err := store.New(e, store.Options{})
	if err != nil {
		e.Close()
		return err
	}
	fmt.Fprintf(stdout, "PostgreSQL schema is up to date (%d migrations applied now)\n", len(applied))
	return db.Close()
}
