package app

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/modelrouter"
)

// The models section of config.yaml as the setup screen writes it: one
// openai-style backend per role it sets (main on "setup", stt on
// "setup_stt", tts on "setup_tts"), each role naming its backend's one
// model. The setup screen rewrites the section only while it is in this
// shape (or `reverie init`'s empty one, or absent); a section edited by
// hand is left to the user.

// setupRoleBackends names the backend the setup screen writes for a role.
var setupRoleBackends = map[string]string{
	modelrouter.RoleMain: setupBackend,
	config.RoleSTT:       setupBackend + "_stt",
	config.RoleTTS:       setupBackend + "_tts",
}

// setupRoleOrder is the order the roles are written in.
var setupRoleOrder = []string{modelrouter.RoleMain, config.RoleSTT, config.RoleTTS}

// setupModel is one role's model as the setup screen saves it.
type setupModel struct {
	Kind, BaseURL, Model string
	// KeyFile is the API key's file relative to the data dir ("": none).
	KeyFile string
}

// setupConfig is config.yaml with its models section located.
type setupConfig struct {
	path string
	data []byte
	// start and end delimit the models section in data (both len(data)
	// when there is none).
	start, end int
	// models are the section's roles by role name.
	models map[string]setupModel
}

var modelsHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^models:[ \t]*$`) })

// readSetupConfig reads config.yaml and its models section; the section
// must be one the setup screen may rewrite (else api.ErrConflict).
func (a *App) readSetupConfig() (setupConfig, error) {
	c := setupConfig{path: a.configPath(), models: map[string]setupModel{}}
	data, err := os.ReadFile(c.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("read %s: %w", c.path, err)
	}
	c.data = data
	c.start, c.end = len(data), len(data)
	handEdited := fmt.Errorf("%w: config.yaml's models: section was edited by hand; add the backend there", api.ErrConflict)
	if loc := modelsHeader().FindAllIndex(data, -1); len(loc) > 1 {
		return c, handEdited
	} else if len(loc) == 1 {
		c.start, c.end = loc[0][0], sectionEnd(data, loc[0][1])
	} else if bytes.Contains(data, []byte("\nmodels:")) || bytes.HasPrefix(data, []byte("models:")) {
		return c, handEdited // models: {} or a flow mapping
	}
	// The file alone, without the environment's overrides.
	cfg, err := config.Load(c.path, nil, a.extensionIDs())
	if err != nil {
		return c, fmt.Errorf("read %s: %w", c.path, err)
	}
	var ok bool
	if c.models, ok = ownedModels(cfg.Models); !ok {
		return c, handEdited
	}
	if c.start < len(data) && !sameLines(data[c.start:c.end], []byte(renderModels(c.models))) {
		return c, handEdited
	}
	return c, nil
}

// sectionEnd is the end of the section whose header ends at from: its
// indented and blank lines, without the trailing blank ones.
func sectionEnd(data []byte, from int) int {
	i := from
	if i < len(data) && data[i] == '\n' {
		i++
	}
	end := i
	for i < len(data) {
		next := len(data)
		if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
			next = i + j + 1
		}
		if line := data[i:next]; len(bytes.TrimSpace(line)) > 0 {
			if line[0] != ' ' && line[0] != '\t' {
				break
			}
			end = next
		}
		i = next
	}
	return end
}

// ownedModels reads a models section in the setup screen's shape.
func ownedModels(m config.ModelsConfig) (map[string]setupModel, bool) {
	out := map[string]setupModel{}
	for role, entries := range m.Roles {
		name, known := setupRoleBackends[role]
		if !known || len(entries) != 1 {
			return nil, false
		}
		ref, err := config.ParseModelRef(entries[0])
		if err != nil || ref.Backend != name {
			return nil, false
		}
		b := m.Backends[name]
		keyFile, isFile := strings.CutPrefix(b.APIKey.Source(), "file ")
		if b.APIKey.IsSet() && !isFile || b.ContextSize != 0 || b.MaxTokens != 0 || b.Temperature != nil || b.Timeout != 0 ||
			b.Vision || b.ThinkingBudget != 0 {
			return nil, false
		}
		out[role] = setupModel{Kind: b.Kind, BaseURL: b.BaseURL, Model: ref.Model, KeyFile: keyFile}
	}
	if len(m.Backends) != len(out) {
		return nil, false
	}
	return out, true
}

// renderModels is the models section for models.
func renderModels(models map[string]setupModel) string {
	var b strings.Builder
	b.WriteString("models:\n  # API endpoints by name (see the example above).\n")
	if len(models) == 0 {
		b.WriteString("  backends: {}\n  # Role → ordered \"backend/model\" entries.\n  roles: {}\n")
		return b.String()
	}
	b.WriteString("  backends:\n    # Written by the setup screen.\n")
	for _, role := range setupRoleOrder {
		m, ok := models[role]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "    %s:\n      kind: %s\n", setupRoleBackends[role], m.Kind)
		if m.BaseURL != "" {
			fmt.Fprintf(&b, "      base_url: \"%s\"\n", m.BaseURL)
		}
		if m.KeyFile != "" {
			fmt.Fprintf(&b, "      api_key: {file: %s}\n", m.KeyFile)
		}
	}
	b.WriteString("  # Role → ordered \"backend/model\" entries.\n  roles:\n")
	for _, role := range setupRoleOrder {
		if m, ok := models[role]; ok {
			fmt.Fprintf(&b, "    %s: [\"%s/%s\"]\n", role, setupRoleBackends[role], m.Model)
		}
	}
	return b.String()
}

// sameLines reports whether a and b have the same lines apart from blank
// lines and comments, in any order.
func sameLines(a, b []byte) bool {
	lines := func(d []byte) []string {
		var out []string
		for _, l := range strings.Split(string(d), "\n") {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
				out = append(out, strings.TrimRight(l, " \t\r"))
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(lines(a), lines(b))
}

// write saves c with models as its models section.
func (c setupConfig) write(models map[string]setupModel) error {
	var out []byte
	section := []byte(renderModels(models))
	if c.start < len(c.data) {
		out = slices.Concat(c.data[:c.start], section, c.data[c.end:])
	} else {
		out = slices.Clone(c.data)
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, '\n')
		}
		out = slices.Concat(out, []byte("\n"), section)
	}
	if err := datadir.WriteFile(c.path, out, 0o600); err != nil {
		return fmt.Errorf("save %s: %w", c.path, err)
	}
	return nil
}

// storeKey saves an API key entered on the setup screen in the data dir's
// secrets (rel is relative to the data dir).
func (a *App) storeKey(rel, key string) error {
	p := filepath.Join(a.opts.DataDir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("store the API key: %w", err)
	}
	if err := datadir.WriteFile(p, []byte(key+"\n"), 0o600); err != nil {
		return fmt.Errorf("store the API key: %w", err)
	}
	return nil
}
