package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/command"
	"github.com/reverie-ai/reverie/extensions/telegram/telegramtest"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// The extensions' commands reach the command line through the bundle
// (command.Register from their init), each under the name it registered,
// listed in the help beside the built-in ones; cmd/reverie names none.
func TestExtensionCommands(t *testing.T) {
	root := newRoot(strings.NewReader(""), os.Stdout, os.Stderr, nil, nil)
	registered := command.Registered()
	if len(registered) == 0 {
		t.Fatal("no extension registered a command (the bundle brings reverie telegram)")
	}
	for _, info := range registered {
		path := strings.Fields(info.Parent + " " + info.Name)
		c, _, err := root.Find(path)
		if err != nil || c.Name() != info.Name {
			t.Errorf("reverie %s (from %s) is not a command: %v", strings.Join(path, " "), info.Extension, err)
		}
		_, help, _ := runCLI(t, nil, append(path[:len(path)-1:len(path)-1], "--help")...)
		if !strings.Contains(help, "\n  "+info.Name+" ") {
			t.Errorf("reverie %s --help does not list %s:\n%s", info.Parent, info.Name, help)
		}
	}
	// cmd/reverie names no extension for its commands: memory import comes
	// from the MCP extension.
	if c, _, err := root.Find([]string{"memory", "import"}); err != nil || c.Name() != "import" || !strings.Contains(c.Short, "MCP") {
		t.Errorf("reverie memory import: %v", err)
	}
	if c, _, err := root.Find([]string{"telegram", "approve"}); err != nil || c.Name() != "approve" {
		t.Errorf("reverie telegram approve: %v", err)
	}
}

// Doctor judges the extensions through the kernel (extension.Diagnoser,
// extension.Info.NotConfigured): it imports none of them.
func TestDoctorNamesNoExtension(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doctor.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(path, "github.com/reverie-ai/reverie/extensions/") {
			t.Errorf("doctor.go imports %s", path)
		}
	}
}

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
	if code != ExitFailure || errs != "reverie: unknown, used or expired pairing code: ABCD2345; the person gets a new code by writing to the bot again\n" {
		t.Fatalf("approve an unknown code: %d %q", code, errs)
	}
	code, _, errs = runCLI(t, base, "telegram", "approve", "12", "--data", dir)
	if code != ExitFailure || errs != "reverie: \"12\" is not a pairing code (8 letters and digits); the person gets a new code by writing to the bot again\n" {
		t.Fatalf("approve a malformed code: %d %q", code, errs)
	}
	if code, out, _ := runCLI(t, base, "telegram", "pending", "--data", dir); code != ExitOK || !strings.Contains(out, "Nobody is waiting") {
		t.Fatalf("pending: %d %q", code, out)
	}

	// A stranger's display name cannot drive the owner's terminal: its
	// escape sequences and newlines are shown escaped, on one line.
	db, err = sqlite.Open(t.Context(), filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	forged := "Eve\x1b[2K\rMallory (user 1): asked\nBob\u202e"
	_, err = db.ExecContext(t.Context(), `INSERT INTO telegram_pairing (code_hash, user_id, chat_id, name, created_at, expires_at, last_sent_at)
		VALUES ('h', 77, 77, ?, 1, ?, 1)`, forged, time.Now().Add(time.Hour).UnixNano())
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, base, "telegram", "pending", "--data", dir)
	defer func() {
		// A flood is cleared in one command.
		if code, out, _ := runCLI(t, base, "telegram", "clear", "--data", dir); code != ExitOK || !strings.Contains(out, "Removed 1 waiting") {
			t.Errorf("clear: %d %q", code, out)
		}
		if code, out, _ := runCLI(t, base, "telegram", "pending", "--data", dir); code != ExitOK || !strings.Contains(out, "Nobody is waiting") {
			t.Errorf("pending after clear: %d %q", code, out)
		}
	}()
	if code != ExitOK || strings.ContainsAny(out, "\x1b\r\u202e") || strings.Count(out, "\n") != 1 ||
		!strings.Contains(out, `Eve\x1b[2K\rMallory (user 1): asked\nBob\u202e (user 77)`) {
		t.Fatalf("pending with a forged name: %d %q", code, out)
	}
}

// The in-process commands leave out the channels, found by what each
// extension is rather than by name, so a channel added to the bundle is
// left out too.
func TestIsChannel(t *testing.T) {
	want := map[string]bool{"web": true, "cli": true, "matrix": true, "telegram": true, "kv": false, "mcp": false}
	seen := 0
	for _, info := range extension.Registered() {
		w, ok := want[info.ID]
		if !ok {
			continue
		}
		seen++
		if got := isChannel(info); got != w {
			t.Errorf("isChannel(%s) = %v, want %v", info.ID, got, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d bundled extensions checked are registered", seen, len(want))
	}
	broken := extension.Info{ID: "broken", New: func() extension.Extension { panic("no") }}
	if !isChannel(broken) {
		t.Error("an extension whose constructor panics is kept")
	}
}
