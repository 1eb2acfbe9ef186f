package world

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var fixed = time.Date(2025, 1, 15, 14, 32, 7, 0, time.UTC)

func clock() time.Time { return fixed }

func TestLoadCorruptMovedAside(t *testing.T) {
	tests := []struct {
		name    string
		content string
		reason  string
	}{
		{name: "not JSON", content: "{this is not json", reason: "parse world state"},
		{name: "truncated", content: `{"version":1,"identity":{`, reason: "parse world state"},
		{name: "not an object", content: `[1,2,3]`, reason: "parse world state"},
		{name: "version not a number", content: `{"version":"2","topics":[]}`, reason: "not a whole number"},
		{name: "negative version", content: `{"version":-1}`, reason: "not a whole number"},
		{name: "null", content: `null`, reason: "not a JSON object"},
		{name: "unknown field", content: `{"version":2,"mood":"happy"}`, reason: "unknown field"},
		{name: "unknown field in v1", content: `{"version":1,"mood":"happy"}`, reason: "unknown field"},
		{name: "unknown field unversioned", content: `{"mood":"happy"}`, reason: "unknown field"},
		{name: "v0 topics not strings", content: `{"topics":[{"a":1}]}`, reason: "migrate world state from version 0"},
		{name: "bad time zone", content: `{"version":2,"timezone":"Mars/Olympus_Mons"}`, reason: "IANA"},
		{name: "trailing data", content: `{"version":2} {"version":2}`, reason: "data after"},
		{name: "bad goal", content: `{"version":2,"goals":[{"text":"x","status":"maybe"}]}`, reason: "unknown status"},
		{name: "empty file", content: ``, reason: "parse world state"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FileName)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := Check(dir); err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("Check = %v, want error containing %q", err, tc.reason)
			}
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			s, err := load(dir, logger, clock)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s, Default(fixed)) {
				t.Errorf("state = %+v, want default", s)
			}
			aside := path + ".corrupt-20250115T143207Z"
			kept, err := os.ReadFile(aside)
			if err != nil {
				t.Fatalf("corrupt file not kept aside: %v", err)
			}
			if string(kept) != tc.content {
				t.Errorf("kept %q, want %q", kept, tc.content)
			}
			if err := Check(dir); err != nil {
				t.Errorf("fresh file does not check: %v", err)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), aside) {
				t.Errorf("no warning naming the kept file: %s", logs.String())
			}
		})
	}
}

func TestLoadCorruptTwiceKeepsBoth(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	for i, content := range []string{"first!", "second!"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := load(dir, nil, clock); err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	for name, want := range map[string]string{
		FileName + ".corrupt-20250115T143207Z":   "first!",
		FileName + ".corrupt-20250115T143207Z-1": "second!",
	} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestLoadValidKept(t *testing.T) {
	dir := t.TempDir()
	want := &State{
		Version:   Version,
		UpdatedAt: fixed,
		Identity:  Identity{UserName: "Ada", AgentName: "Reverie", UserLocation: "London"},
		Project:   "analytical engine",
		Topics:    []string{"notes", "bernoulli numbers"},
		Goals:     []Goal{{Text: "publish the notes", Status: GoalActive}, {Text: "meet Babbage", Status: GoalDone}},
		Rules:     []string{"answer briefly"},
	}
	if err := Save(dir, want); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	got, err := load(dir, nil, func() time.Time { return fixed.Add(time.Hour) })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	after, _ := os.ReadFile(filepath.Join(dir, FileName))
	if !bytes.Equal(before, after) {
		t.Error("loading a valid file changed it")
	}
	matches, _ := filepath.Glob(filepath.Join(dir, FileName+".corrupt-*"))
	if len(matches) != 0 {
		t.Errorf("valid file moved aside: %v", matches)
	}
}

func TestLoadMissingCreates(t *testing.T) {
	dir := t.TempDir()
	s, err := load(dir, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, Default(fixed)) {
		t.Errorf("state = %+v", s)
	}
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"version": 3`, `"session_user_name": ""`, `"timezone": ""`, `"topics": []`, `"agent_name": "Reverie"`, `"updated_at": "2025-01-15T14:32:07Z"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("file lacks %s:\n%s", want, data)
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(tmps) != 0 {
		t.Errorf("temp files left: %v", tmps)
	}
}

func TestSaveRejectsInvalid(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, &State{Version: 99}); err == nil {
		t.Fatal("saved an invalid state")
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); !os.IsNotExist(err) {
		t.Errorf("file written for an invalid state: %v", err)
	}
}

func TestNullListsNormalised(t *testing.T) {
	s, err := Decode([]byte(`{"version":2,"topics":null,"goals":null,"rules":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Topics == nil || s.Goals == nil || s.Rules == nil {
		t.Errorf("null lists not normalised: %+v", s)
	}
}
