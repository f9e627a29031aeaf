package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fleetcam/fleetcam/store"
)

// signingKeyFile holds the generated token signing key inside the data dir.
const signingKeyFile = "signing.key"

// loadSigningKey returns the configured key (hex or text; its length is
// checked with the configuration), else the key kept in the data dir,
// generating and persisting it (0600) on first start.
func loadSigningKey(configured, dataDir string) ([]byte, error) {
	if configured != "" {
		if b, err := hex.DecodeString(configured); err == nil && len(b) >= 32 {
			return b, nil
		}
		return []byte(configured), nil
	}
	path := filepath.Join(dataDir, signingKeyFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil || len(b) < 32 {
			return nil, fmt.Errorf("%s is not a valid key; remove it to generate a new one (all tokens become invalid)", path)
		}
		return b, nil
	}
	if !os.IsNotExist(err) {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	if err := writeSecretFile(path, hex.EncodeToString(b)+"\n"); err != nil {
		return nil, err
	}
	return b, nil
}

// writeSecretFile creates path with mode 0600 and content, refusing to overwrite.
func writeSecretFile(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// randomPassword returns a password of 20 letters and digits that follows
// the password rules (store.CheckPassword).
func randomPassword() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
	for {
		b := make([]byte, 0, 20)
		var one [1]byte
		for len(b) < 20 {
			rand.Read(one[:])
			// Reject the top bytes so that every letter is equally likely.
			if int(one[0]) < 256-256%len(alphabet) {
				b = append(b, alphabet[int(one[0])%len(alphabet)])
			}
		}
		s := string(b)
		if store.CheckPassword(s) == nil {
			return s
		}
	}
}
