package app

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/config"
)

// The setup screen rewrites config.yaml's models section only while it is
// absent, `reverie init`'s empty one or its own; after a write the file
// loads with the roles it was given, and what is around the section stays.
func TestSetupModelsSection(t *testing.T) {
	const own = "models:\n  backends:\n    # Written by the setup screen.\n    setup:\n      kind: openai\n" +
		"      base_url: \"http://127.0.0.1:9/v1\"\n      api_key: {file: secrets/model_api_key}\n  roles:\n    main: [\"setup/gpt\"]\n"
	for _, tc := range []struct {
		name, file string
		missing    bool // no config.yaml at all
		handEdited bool
		wantMain   string // the main role read from the section
	}{
		{name: "no file", missing: true},
		{name: "no models section", file: "log:\n  level: info\n"},
		{name: "reverie init's", file: string(config.DefaultFile())},
		{name: "the setup screen's", file: "log:\n  level: info\n\n" + own, wantMain: "gpt"},
		{name: "the setup screen's with speech", file: strings.Replace(own, "  roles:\n", "    setup_stt:\n      kind: openai\n      base_url: \"http://127.0.0.1:8/v1\"\n  roles:\n    stt: [\"setup_stt/whisper-1\"]\n", 1), wantMain: "gpt"},
		{name: "a key from the environment", file: strings.Replace(own, "{file: secrets/model_api_key}", "{env: OPENAI_API_KEY}", 1), handEdited: true},
		{name: "a setting added by hand", file: strings.Replace(own, "      kind: openai\n", "      kind: openai\n      context_size: 8000\n", 1), handEdited: true},
		{name: "another backend", file: strings.Replace(own, "  roles:\n", "    local:\n      kind: ollama\n  roles:\n    compaction: [local/x]\n", 1), handEdited: true},
		{name: "a flow mapping", file: "models: {}\n", handEdited: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a := &App{opts: Options{DataDir: dir}}
			path := filepath.Join(dir, "config.yaml")
			if !tc.missing {
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c, err := a.readSetupConfig()
			if tc.handEdited {
				if !errors.Is(err, api.ErrConflict) {
					t.Fatalf("read: %v, want a conflict", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.models["main"].Model; got != tc.wantMain {
				t.Fatalf("main model %q, want %q", got, tc.wantMain)
			}
			c.models["tts"] = setupModel{Kind: "openai", BaseURL: "http://127.0.0.1:7/v1", Model: "tts-1", KeyFile: "secrets/tts_api_key"}
			if err := c.write(c.models); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			if !tc.missing && !strings.HasPrefix(tc.file, "models:") {
				head := tc.file[:strings.Index(tc.file+"models:", "models:")]
				if !strings.HasPrefix(string(data), strings.TrimRight(head, "\n")) {
					t.Errorf("what came before the section changed:\n%s", data)
				}
			}
			cfg, err := config.Load(path, nil, nil)
			if err == nil {
				cfg.SetDataDir(dir)
				err = cfg.Validate()
			}
			if err != nil {
				t.Fatalf("the written file does not load: %v\n%s", err, data)
			}
			if got := cfg.Models.Roles["tts"]; !slices.Equal(got, []string{"setup_tts/tts-1"}) {
				t.Errorf("tts role %v\n%s", got, data)
			}
			if tc.wantMain != "" && !slices.Equal(cfg.Models.Roles["main"], []string{"setup/" + tc.wantMain}) {
				t.Errorf("main role %v\n%s", cfg.Models.Roles["main"], data)
			}
			// What was written is the setup screen's: it reads back.
			again, err := a.readSetupConfig()
			if err != nil || !maps.Equal(again.models, c.models) {
				t.Errorf("read back: %v, %+v", err, again.models)
			}
		})
	}
}
