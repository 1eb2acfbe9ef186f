package world

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestMigrations loads every old-version fixture and compares the rewritten
// file with its golden (testdata/<fixture>.want.json).
func TestMigrations(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		from    int
	}{
		{"llm_thalamus layout", "v0_thalamus.json", 0},
		{"unversioned minimal with a bad zone", "v0_minimal.json", 0},
		{"version 1", "v1.json", 1},
		{"version 2", "v2.json", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join("testdata", tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := Check(dir); err != nil {
				t.Errorf("Check of an older version = %v, want nil", err)
			}
			s, err := load(dir, nil, clock)
			if err != nil {
				t.Fatal(err)
			}
			if s.Version != Version {
				t.Errorf("version = %d", s.Version)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", strings.TrimSuffix(tc.fixture, ".json")+".want.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("migrated file:\n%s\nwant:\n%s", got, want)
			}
			backup := path + ".v" + string(rune('0'+tc.from)) + ".bak"
			if kept, err := os.ReadFile(backup); err != nil || !bytes.Equal(kept, orig) {
				t.Errorf("original not kept as %s: %v", filepath.Base(backup), err)
			}
			// Loading again changes nothing.
			if _, err := load(dir, nil, func() time.Time { return fixed.Add(time.Hour) }); err != nil {
				t.Fatal(err)
			}
			again, _ := os.ReadFile(path)
			if !bytes.Equal(again, got) {
				t.Error("a second load rewrote the migrated file")
			}
		})
	}
}

func TestThalamusMigrationContent(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "v0_thalamus.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"user name from session_user_name", s.Identity.UserName, "Ada"},
		{"session_user_name kept", s.Identity.SessionUserName, "Ada"},
		{"agent name kept", s.Identity.AgentName, "Thalamus"},
		{"zone from tz", s.TimeZone, "Europe/London"},
		{"naive time as UTC", s.UpdatedAt, time.Date(2025, 1, 10, 8, 15, 0, 0, time.UTC)},
		{"topics trimmed, empty dropped", strings.Join(s.Topics, "|"), "world state|obsidian"},
		{"goals", len(s.Goals), 3},
		{"completed is done", s.Goals[1].Status, GoalDone},
		{"unknown status is active", s.Goals[2].Status, GoalActive},
		{"rules from strings and objects", strings.Join(s.Rules, "|"), "answer briefly|no emojis"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
}

// Seed 002 §8.1: llm_thalamus's identity is {user_name, session_user_name,
// agent_name, user_location}; migrating keeps every one of them.
func TestThalamusIdentityKept(t *testing.T) {
	cases := []struct {
		name, identity      string
		user, session, seen string // seen: what the world context shows
	}{
		{"both names", `{"user_name": "Ada Lovelace", "session_user_name": "Ada", "agent_name": "T", "user_location": "London"}`,
			"Ada Lovelace", "Ada", "User: Ada Lovelace\nUser's name in this session: Ada\n"},
		{"only the session name", `{"user_name": "", "session_user_name": " Ada "}`, "Ada", "Ada", "User: Ada\n"},
		{"only the user name", `{"user_name": "Ada", "session_user_name": null}`, "Ada", "", "User: Ada\n"},
		{"no session key", `{"user_name": "Ada"}`, "Ada", "", "User: Ada\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Decode([]byte(`{"project": "", "topics": [], "goals": [], "rules": [], "identity": ` + c.identity + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if s.Identity.UserName != c.user || s.Identity.SessionUserName != c.session {
				t.Errorf("identity %+v, want user %q, session %q", s.Identity, c.user, c.session)
			}
			got := s.Summary()
			if !strings.HasPrefix(got, strings.TrimSuffix(c.seen, "\n")) || strings.Contains(got, "in this session") != strings.Contains(c.seen, "in this session") {
				t.Errorf("summary %q, want it to begin with %q and name the user no more", got, c.seen)
			}
			// The session name survives an encode and decode, and the
			// op sets it.
			data, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Decode(data)
			if err != nil || again.Identity != s.Identity {
				t.Fatalf("round trip: %+v, %v", again, err)
			}
			op, err := OpSpec{Op: OpSetSessionUserName, Value: "Countess"}.Parse()
			if err != nil {
				t.Fatal(err)
			}
			if err := op.apply(again); err != nil || again.Identity.SessionUserName != "Countess" {
				t.Errorf("set_session_user_name: %+v, %v", again.Identity, err)
			}
		})
	}
}

func TestFutureVersionRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	content := []byte(`{"version": 99, "hologram": true}`)
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Check(dir); !errors.Is(err, ErrFutureVersion) {
		t.Errorf("Check = %v, want ErrFutureVersion", err)
	}
	_, err := load(dir, nil, clock)
	if !errors.Is(err, ErrFutureVersion) || !strings.Contains(err.Error(), "version 99") || !strings.Contains(err.Error(), "upgrade") {
		t.Fatalf("load = %v, want a clear ErrFutureVersion", err)
	}
	if _, err := OpenStore(dir, StoreOptions{Now: clock}); !errors.Is(err, ErrFutureVersion) {
		t.Errorf("OpenStore = %v, want ErrFutureVersion", err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, content) {
		t.Errorf("file of a newer version was changed: %s", got)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, FileName+".*")); len(m) != 0 {
		t.Errorf("files written beside it: %v", m)
	}
}

func TestEveryVersionHasAMigration(t *testing.T) {
	if len(migrations) != Version {
		t.Fatalf("%d migrations for schema version %d", len(migrations), Version)
	}
	for v, m := range migrations {
		if m == nil {
			t.Errorf("no migration from version %d", v)
		}
	}
}
