package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"golang.org/x/crypto/bcrypt"
)

// initialPasswordFile receives a generated first-partner password (0600).
const initialPasswordFile = "initial-partner-password"

// ensureBootstrapPartner creates the first partner and its first user when the
// store has no partner. Without a configured password it generates one, logs
// it once and writes it to a 0600 file in the data dir.
//
// A generated password is written (to a file of its own in the data dir,
// created 0700 when missing) before the partner is committed, and the file
// takes its final name after the commit: a start that cannot keep the
// password creates no partner, and one whose partner is committed leaves the
// password in a file and in the log.
func ensureBootstrapPartner(db *store.DB, cfg configs.Config, log *slog.Logger) error {
	var count int
	db.View(context.Background(), func(tx *store.Tx) error { count = tx.PartnerCount(); return nil })
	if count > 0 {
		return nil
	}
	password, generated := cfg.Bootstrap.PartnerPassword, false
	var pending *pendingSecret
	if password == "" {
		password, generated = randomPassword(), true
		var err error
		pending, err = prepareSecretFile(filepath.Join(cfg.DataDir, initialPasswordFile), password+"\n")
		if err != nil {
			return fmt.Errorf("create the first partner: %w", err)
		}
		defer pending.discard()
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), cfg.Auth.BcryptCost)
	if err != nil {
		return err
	}
	err = db.Update(context.Background(), store.Actor{Source: "bootstrap"}, func(tx *store.Tx) error {
		p, err := tx.CreatePartner(cfg.Bootstrap.PartnerName)
		if err != nil {
			return err
		}
		return tx.CreateUser(&store.User{Email: cfg.Bootstrap.PartnerEmail, Name: cfg.Bootstrap.PartnerName,
			PasswordHash: hash, PartnerID: p.ID, AccessLevel: store.AccessEditor})
	})
	if err != nil {
		return fmt.Errorf("create the first partner: %w", err)
	}
	if !generated {
		log.Info("created the first partner", "email", cfg.Bootstrap.PartnerEmail)
		return nil
	}
	path, err := pending.keep()
	if err != nil {
		// The partner exists: its password stays where it was written.
		log.Error("the first partner's password file could not take its name", "file", path, "err", err)
	}
	log.Warn("created the first partner with a generated password; it is shown once and kept in "+path,
		"email", cfg.Bootstrap.PartnerEmail, "password", password)
	return nil
}

// pendingSecret is a secret written to a temporary file beside the path it
// is meant for, until keep gives it that name or discard removes it.
type pendingSecret struct {
	tmp, path string
	kept      bool
}

// prepareSecretFile creates path's directory (0700) when missing and writes
// content to a new 0600 file beside path. It refuses when path exists: a
// secret there may be the only copy of one still in use.
func prepareSecretFile(path, content string) (*pendingSecret, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s exists but the store has no partner: it may hold another store's password; "+
			"move it away, or set bootstrap.partnerPassword (FLEETCAM_PARTNER_PASSWORD)", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return nil, err
	}
	p := &pendingSecret{tmp: f.Name(), path: path}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p.tmp)
		return nil, fmt.Errorf("write %s: %w", p.tmp, err)
	}
	return p, nil
}

// keep gives the secret its name and returns where it is: the temporary
// file, with the error, when it cannot be renamed.
func (p *pendingSecret) keep() (string, error) {
	p.kept = true
	if err := os.Rename(p.tmp, p.path); err != nil {
		return p.tmp, err
	}
	return p.path, nil
}

// discard removes the temporary file unless keep was called.
func (p *pendingSecret) discard() {
	if !p.kept {
		os.Remove(p.tmp)
	}
}
