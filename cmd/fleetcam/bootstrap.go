package main

import (
	"context"
	"fmt"
	"log/slog"
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
func ensureBootstrapPartner(db *store.DB, cfg configs.Config, log *slog.Logger) error {
	var count int
	db.View(context.Background(), func(tx *store.Tx) error { count = tx.PartnerCount(); return nil })
	if count > 0 {
		return nil
	}
	password, generated := cfg.Bootstrap.PartnerPassword, false
	if password == "" {
		password, generated = randomPassword(), true
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
	if generated {
		path := filepath.Join(cfg.DataDir, initialPasswordFile)
		if err := writeSecretFile(path, password+"\n"); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		log.Warn("created the first partner with a generated password; it is shown once and kept in "+path,
			"email", cfg.Bootstrap.PartnerEmail, "password", password)
	} else {
		log.Info("created the first partner", "email", cfg.Bootstrap.PartnerEmail)
	}
	return nil
}
