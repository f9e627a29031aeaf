package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	boltstore "github.com/fleetcam/fleetcam/store/bolt"
	"github.com/fleetcam/fleetcam/store/postgres"
	"golang.org/x/crypto/bcrypt"
)

// admin runs the operator subcommands on a data dir while the server is stopped.
func admin(noun string, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return fmt.Errorf("usage: fleetcam %s add …", noun)
	}
	fs := flag.NewFlagSet("fleetcam "+noun+" add", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	where := addStoreFlags(fs)
	name := fs.String("name", "", "partner name")
	email := fs.String("email", "", "user e-mail")
	password := fs.String("password", "", "password (generated and printed when empty)")
	partnerID := fs.Int64("partner", 0, "partner id (user add)")
	orgID := fs.Int64("organization", 0, "organization id (user add)")
	level := fs.String("access-level", store.AccessEditor, "viewer, editor or editorWithoutMediaAccess")
	create := fs.Bool("create", false, "start a new store when the data dir has none")
	if err := fs.Parse(args[1:]); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	switch {
	case !strings.Contains(*email, "@"):
		return errors.New("--email must be an e-mail address")
	case noun == "partner" && strings.TrimSpace(*name) == "":
		return errors.New("--name is required")
	case noun == "user" && (*partnerID == 0) == (*orgID == 0):
		return errors.New("user add needs exactly one of --partner and --organization")
	case !store.ValidAccessLevel(*level):
		return errors.New("--access-level must be viewer, editor or editorWithoutMediaAccess")
	}
	pw := *password
	if pw == "" {
		pw = randomPassword()
	} else if err := store.CheckPassword(pw); err != nil {
		return fmt.Errorf("--password %w", err)
	}
	cfg, err := where.load(getenv)
	if err != nil {
		return err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(pw), cfg.Auth.BcryptCost)
	if err != nil {
		return err
	}
	db, err := openStore(cfg.DataDir, cfg.Store.PostgresURL, *create)
	if err != nil {
		return err
	}
	defer db.Close()
	u := &store.User{Email: *email, Name: *name, PasswordHash: hash, AccessLevel: *level}
	err = db.Update(context.Background(), store.Actor{Source: "cli"}, func(tx *store.Tx) error {
		switch {
		case noun == "partner":
			p, err := tx.CreatePartner(*name)
			if err != nil {
				return err
			}
			u.PartnerID = p.ID
		case *partnerID != 0:
			if _, err := tx.Partner(*partnerID); err != nil {
				return err
			}
			u.PartnerID = *partnerID
		default:
			o, err := tx.Organization(*orgID)
			if err != nil {
				return err
			}
			u.OrganizationID, u.PartnerID = o.ID, o.PartnerID
		}
		return tx.CreateUser(u)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created user %d (%s) for partner %d", u.ID, u.Email, u.PartnerID)
	if u.OrganizationID != 0 {
		fmt.Fprintf(stdout, ", organization %d", u.OrganizationID)
	}
	fmt.Fprintln(stdout)
	if *password == "" {
		fmt.Fprintf(stdout, "password: %s\n", pw)
	}
	return nil
}

// storeFlags are the flags that name the store of an operator command
// and the settings it applies (a password's bcrypt cost): -config, a
// configuration file as the server reads it, and -data, a data dir that
// takes precedence over the file's.
type storeFlags struct{ config, data *string }

func addStoreFlags(fs *flag.FlagSet) storeFlags {
	return storeFlags{
		config: fs.String("config", "", "YAML configuration file, as the server reads it (its dataDir, store.postgresURL and auth.bcryptCost)"),
		data:   fs.String("data", "", "data directory (default: the configuration's dataDir, ./data unless set)"),
	}
}

// load reads the configuration of -config and the environment, with -data
// as its data dir when given.
func (f storeFlags) load(getenv func(string) string) (configs.Config, error) {
	cfg, err := configs.Load(*f.config, getenv)
	if err != nil {
		return cfg, err
	}
	if *f.data != "" {
		cfg.DataDir = *f.data
	}
	return cfg, nil
}

// openStore opens the store of an operator command: the PostgreSQL
// database of postgresURL when it is set, else the bbolt file of dataDir.
// A data dir without a store is refused unless create is set: a mistyped
// -data would otherwise receive a new, empty store that the server never
// reads.
func openStore(dataDir, postgresURL string, create bool) (*store.DB, error) {
	if postgresURL != "" {
		return postgres.Open(context.Background(), postgresURL, postgres.Options{}, store.Options{})
	}
	path := filepath.Join(dataDir, storeFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && !create {
		return nil, fmt.Errorf("%s holds no fleetcam store (%s is missing): check -data, or add --create to start a new one", dataDir, storeFile)
	}
	db, err := boltstore.Open(path, store.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w (is fleetcam running on this data dir?)", err)
	}
	return db, nil
}

