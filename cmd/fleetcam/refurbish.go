package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/fleetcam/fleetcam/store"
)

// deviceAdmin runs the device operator subcommands on a data dir while the
// server is stopped: `device refurbish` marks a device refurbished, after
// which a partner cannot change its billing status or auxiliary billing.
func deviceAdmin(args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "refurbish" {
		return fmt.Errorf("usage: fleetcam device refurbish -data DIR --imei IMEI [--undo]")
	}
	fs := flag.NewFlagSet("fleetcam device refurbish", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	where := addStoreFlags(fs)
	imei := fs.String("imei", "", "device IMEI")
	undo := fs.Bool("undo", false, "clear the refurbished mark")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	if !store.ValidIMEI(*imei) {
		return errors.New("--imei must be a 15-digit IMEI")
	}
	cfg, err := where.load(getenv)
	if err != nil {
		return err
	}
	db, err := openStore(cfg.DataDir, cfg.Store.PostgresURL, false)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Update(context.Background(), store.Actor{Source: "cli"}, func(tx *store.Tx) error { return tx.SetRefurbished(*imei, !*undo) }); err != nil {
		return err
	}
	state := "refurbished"
	if *undo {
		state = "not refurbished"
	}
	fmt.Fprintf(stdout, "device %s is %s\n", *imei, state)
	return nil
}
