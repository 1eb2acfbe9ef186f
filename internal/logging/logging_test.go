package logging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction(LumberjackMillGoroutine))
}

// jsonLines decodes one JSON object per line.
func jsonLines(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("decode log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestNewWritesToConsoleAndFile(t *testing.T) {
	var console bytes.Buffer
	path := filepath.Join(t.TempDir(), "logs", "reverie.log")
	logger, closer, err := New(Options{Format: "json", File: path, Console: &console})
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("agent started", "pid", 42, "api_key", "sk-live-123")
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	fileData, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"console": console.Bytes(), "file": fileData} {
		lines := jsonLines(t, data)
		if len(lines) != 1 {
			t.Fatalf("%s: got %d records, want 1:\n%s", name, len(lines), data)
		}
		rec := lines[0]
		if rec["msg"] != "agent started" || rec["pid"] != float64(42) || rec["api_key"] != Redacted {
			t.Errorf("%s: unexpected record %v", name, rec)
		}
		if strings.Contains(string(data), "sk-live-123") {
			t.Errorf("%s: secret leaked: %s", name, data)
		}
	}
	info, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("log dir mode = %o, want 700", perm)
	}
}

func TestNewTextFormatWithoutFile(t *testing.T) {
	var console bytes.Buffer
	logger, closer, err := New(Options{Console: &console})
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	logger.Info("hello", "thread", "web:abc")
	got := console.String()
	if !strings.Contains(got, "level=INFO") || !strings.Contains(got, "msg=hello") || !strings.Contains(got, "thread=web:abc") {
		t.Errorf("text output = %q", got)
	}
}

func TestLevelFiltering(t *testing.T) {
	tests := []struct {
		name  string
		level string
		want  []string
	}{
		{"default is info", "", []string{"info", "warn", "error"}},
		{"debug", "debug", []string{"debug", "info", "warn", "error"}},
		{"warn", "WARN", []string{"warn", "error"}},
		{"error", "error", []string{"error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var console bytes.Buffer
			path := filepath.Join(t.TempDir(), "r.log")
			logger, closer, err := New(Options{Level: tt.level, Format: "json", File: path, Console: &console})
			if err != nil {
				t.Fatal(err)
			}
			logger.Debug("debug")
			logger.Info("info")
			logger.Warn("warn")
			logger.Error("error")
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			fileData, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for sink, data := range map[string][]byte{"console": console.Bytes(), "file": fileData} {
				var got []string
				for _, rec := range jsonLines(t, data) {
					got = append(got, rec["msg"].(string))
				}
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Errorf("%s: logged %v, want %v", sink, got, tt.want)
				}
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"", slog.LevelInfo, false},
		{"debug", slog.LevelDebug, false},
		{" Info ", slog.LevelInfo, false},
		{"warn", slog.LevelWarn, false},
		{"warning", slog.LevelWarn, false},
		{"ERROR", slog.LevelError, false},
		{"info+2", slog.LevelInfo + 2, false},
		{"verbose", 0, true},
		{"3", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseLevel(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseLevel(%q) = %v, want error", tt.in, got)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.in)) || !strings.Contains(err.Error(), "debug, info, warn or error") {
					t.Errorf("error %q should name the bad value and the valid ones", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseLevel(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"bad level", Options{Level: "loud"}, `invalid log level "loud"`},
		{"bad format", Options{Format: "xml"}, `invalid log format "xml"`},
		{"negative size", Options{MaxSizeMB: -1}, "invalid log max size -1"},
		{"negative backups", Options{MaxBackups: -2}, "invalid log max backups -2"},
		{"unwritable file", Options{File: filepath.Join(notDir, "sub", "r.log")}, "create log directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Console = &bytes.Buffer{}
			_, _, err := New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestFileRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "reverie.log")
	logger, closer, err := New(Options{Format: "json", File: path, MaxSizeMB: 1, MaxBackups: 3, Console: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.Repeat("x", 1000)
	for i := range 1200 { // ~1.2 MB of records
		logger.Info("filler", "i", i, "payload", payload)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	backups, err := filepath.Glob(filepath.Join(dir, "reverie-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(backups) != 1 {
		t.Fatalf("backups = %v, want exactly one rotated file", backups)
	}
	for _, f := range append(backups, path) {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if info.Size() > 1024*1024 {
			t.Errorf("%s is %d bytes, over the 1 MB limit", f, info.Size())
		}
	}
}
