package matrix

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// session is the bot's login, kept in <data>/matrix/session.json (mode
// 0600) so that a restart reuses the device (and its encryption keys)
// instead of creating a new one.
type session struct {
	Homeserver  string `json:"homeserver"`
	UserID      string `json:"user_id"`
	DeviceID    string `json:"device_id"`
	AccessToken string `json:"access_token"`
	// PickleKey encrypts the Olm account and sessions in the crypto store.
	PickleKey string `json:"pickle_key"`
}

// stateDir is the channel's directory in the data dir.
func stateDir(dataDir string) string { return filepath.Join(dataDir, "matrix") }

func sessionPath(dataDir string) string { return filepath.Join(stateDir(dataDir), "session.json") }

// loadSession reads the stored session; a missing file is os.ErrNotExist.
func loadSession(path string) (session, error) {
	var s session
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("read %s: %w (delete it to log in again)", path, err)
	}
	if s.DeviceID == "" || s.PickleKey == "" {
		return s, fmt.Errorf("read %s: no device id or pickle key (delete it to log in again)", path)
	}
	return s, nil
}

// save writes the session atomically with mode 0600.
func (s session) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("store the matrix session: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("store the matrix session: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("store the matrix session: %w", err), os.Remove(tmp))
	}
	return nil
}

func newPickleKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawStdEncoding.EncodeToString(b[:]), nil
}
