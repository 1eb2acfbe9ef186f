package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/extensions/telegram/telegramtest"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// doctor checks the Telegram token with getMe (without printing it), and
// `reverie telegram` refuses unknown codes and lists who is waiting.
func TestTelegramDoctorAndCommands(t *testing.T) {
	const token = "123456:TEST-token-abcdefghijklmnopqrstuvwxyz"
	srv := telegramtest.New(t, token)
	dir := filepath.Join(t.TempDir(), "data")
	base := []string{"HOME=" + t.TempDir(), "REVERIE_TELEGRAM__API_URL=" + srv.URL()}
	if code, _, errs := runCLI(t, base, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s", code, errs)
	}
	code, out, _ := runCLI(t, append(base, "REVERIE_TELEGRAM__TOKEN="+token), "doctor", "--data", dir)
	if !strings.Contains(out, "[ok  ] telegram") || !strings.Contains(out, "@"+telegramtest.BotUsername) {
		t.Fatalf("doctor with a good token: %d\n%s", code, out)
	}
	wrong := "999:wrong-token-abcdefghijklmnopqrstuvw"
	code, out, _ = runCLI(t, append(base, "REVERIE_TELEGRAM__TOKEN="+wrong), "doctor", "--data", dir)
	if code != ExitFailure || !strings.Contains(out, "[FAIL] telegram") || strings.Contains(out, "wrong-token") {
		t.Fatalf("doctor with a refused token: %d\n%s", code, out)
	}
	// Without a token the channel is off and not checked.
	if _, out, _ = runCLI(t, base, "doctor", "--data", dir); strings.Contains(out, "telegram") {
		t.Fatalf("doctor checked an unconfigured channel:\n%s", out)
	}
	// A telegram: section without a token is pointed out.
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("telegram:\n  allowed_users: [5]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, out, _ = runCLI(t, base, "doctor", "--data", dir); !strings.Contains(out, "[warn] telegram") || !strings.Contains(out, "no token") {
		t.Fatalf("doctor with a section but no token:\n%s", out)
	}

	code, _, errs := runCLI(t, base, "telegram", "pending", "--data", dir)
	if code != ExitFailure || !strings.Contains(errs, "has Reverie run") {
		t.Fatalf("pending without a database: %d %q", code, errs)
	}
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, _, errs = runCLI(t, base, "telegram", "approve", "ABCD2345", "--data", dir)
	if code != ExitFailure || !strings.Contains(errs, "unknown, used or expired pairing code") {
		t.Fatalf("approve an unknown code: %d %q", code, errs)
	}
	if code, out, _ := runCLI(t, base, "telegram", "pending", "--data", dir); code != ExitOK || !strings.Contains(out, "Nobody is waiting") {
		t.Fatalf("pending: %d %q", code, out)
	}
}
