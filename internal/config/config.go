// Package config is Reverie's typed configuration: a strict YAML file
// (config.yaml in the data dir), environment overrides, built-in defaults
// and validation.
//
// Strictness: an unknown key, a value of the wrong type, a duplicate key or a
// malformed file is an *Error naming the file, the line and the dotted key
// path (`config.yaml:12: unknown key "log.levle"`). The command line exits
// with status 2 on it.
//
// Environment overrides: every key can be set by `REVERIE_` + the upper-case
// key path with `__` between levels (REVERIE_LOG__LEVEL=debug,
// REVERIE_WEB__LISTEN=127.0.0.1:0, REVERIE_TIMEZONE=Europe/Berlin). Values are
// parsed as the target field's type (lists and mappings as YAML flow text);
// an empty value counts as unset. An override for a key that does not exist
// in a known section is an error naming the variable. REVERIE_HOME (the data
// dir) and REVERIE_MODEL are not configuration; variables without `__` that
// are not top-level settings are ignored, and variables for a section that is
// neither a core section nor a registered extension are ignored with a
// warning (a build may lack that extension).
//
// Extension sections: a top-level key that is the id of a registered
// extension is that extension's own section. It is kept as parsed (with its
// positions) until the extension decodes it with DecodeExtension, so errors
// in it still name file, line and key.
//
// A missing or empty (null) value leaves the default in place; lists replace
// their default rather than appending to it.
//
// A *Config is safe for concurrent use by its methods once loaded; its
// exported fields must not be changed after the agent has started.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // time zones work on hosts without a zoneinfo database

	"github.com/goccy/go-yaml/ast"
)

// Config is the core configuration. Later subsystems add their own
// top-level sections as fields with a yaml tag; they are then known keys,
// overridable from the environment, automatically.
type Config struct {
	// Timezone is an IANA zone name, or "Local" for the host's zone. It is
	// used for schedules, naive times and the time shown to the model.
	Timezone string `yaml:"timezone"`
	// Language selects the conversation seed prompt (prompts/SEED_<lang>.txt).
	Language string `yaml:"language"`

	Log        LogConfig        `yaml:"log"`
	Supervisor SupervisorConfig `yaml:"supervisor"`
	Bus        BusConfig        `yaml:"bus"`
	Limits     LimitsConfig     `yaml:"limits"`
	Models     ModelsConfig     `yaml:"models"`
	Tools      ToolsConfig      `yaml:"tools"`
	Memory     MemoryConfig     `yaml:"memory"`
	Dreaming   DreamingConfig   `yaml:"dreaming"`
	Harvest    HarvestConfig    `yaml:"harvest"`
	Reflection ReflectionConfig `yaml:"reflection"`
	Scheduler  SchedulerConfig  `yaml:"scheduler"`
	Workflow   WorkflowConfig   `yaml:"workflow"`
	// Conversations: how conversations get their titles.
	Conversations ConversationsConfig `yaml:"conversations"`
	// Voice: hearing voice messages and speaking replies.
	Voice VoiceConfig `yaml:"voice"`

	meta *meta
}

// ConversationsConfig is the `conversations:` section.
type ConversationsConfig struct {
	// Titles is how a conversation gets its title: TitlesFirstMessage (the
	// first line of its first message, no model call) or TitlesModel (one
	// call of TitleRole after the first reply; a title the user chose is
	// never replaced).
	Titles string `yaml:"titles"`
	// TitleRole is the model role that writes titles (default scout, the
	// cheap one; it falls back to main when not configured).
	TitleRole string `yaml:"title_role"`
	// HistoryTokens is the history budget: a request carries the newest
	// turns of a conversation that fit it; older ones are summarised (in
	// chunks, so not at every turn) and reach the model through that
	// summary and memory recall. 0: no budget (the whole conversation,
	// compacted only when it would not fit the model's context window).
	HistoryTokens int `yaml:"history_tokens"`
}

// DefaultHistoryTokens is conversations.history_tokens by default.
const DefaultHistoryTokens = 12000

// Title modes (conversations.titles).
const (
	TitlesFirstMessage = "first_message"
	TitlesModel        = "model"
)

// LogConfig is the `log:` section.
type LogConfig struct {
	// Level is debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is text or json.
	Format string `yaml:"format"`
	// File enables the rotating log file logs/reverie.log in the data dir.
	File bool `yaml:"file"`
	// MaxSizeMB is the size at which the log file is rotated.
	MaxSizeMB int `yaml:"max_size_mb"`
	// MaxBackups is how many rotated files are kept.
	MaxBackups int `yaml:"max_backups"`
}

// SupervisorConfig is the `supervisor:` section (reverie run).
type SupervisorConfig struct {
	RestartBackoffMin time.Duration `yaml:"restart_backoff_min"`
	RestartBackoffMax time.Duration `yaml:"restart_backoff_max"`
	// CrashLoopLimit crashes within CrashLoopWindow make the supervisor give up.
	CrashLoopLimit  int           `yaml:"crash_loop_limit"`
	CrashLoopWindow time.Duration `yaml:"crash_loop_window"`
	// ShutdownGrace is how long the agent may take to stop after SIGTERM.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// HealthInterval is the period of the /healthz probe.
	HealthInterval time.Duration `yaml:"health_interval"`
}

// BusConfig is the `bus:` section (durable event bus).
type BusConfig struct {
	// MaxAttempts is how often a handler is tried before dead-lettering.
	MaxAttempts int           `yaml:"max_attempts"`
	BaseBackoff time.Duration `yaml:"base_backoff"`
	MaxBackoff  time.Duration `yaml:"max_backoff"`
	// Retention is how long delivered events are kept.
	Retention time.Duration `yaml:"retention"`
}

// LimitsConfig is the `limits:` section: prompt component sizes in
// characters; beyond them the assistant is asked to condense.
type LimitsConfig struct {
	MemoriesChars int `yaml:"memories_chars"`
	PulseChars    int `yaml:"pulse_chars"`
	SkillsChars   int `yaml:"skills_chars"`
}

// Default returns the built-in defaults: the configuration used when there
// is no config file.
func Default() Config {
	return Config{
		Timezone: "Local",
		Language: "en",
		Log: LogConfig{
			Level:      "info",
			Format:     "text",
			File:       true,
			MaxSizeMB:  10,
			MaxBackups: 5,
		},
		Supervisor: SupervisorConfig{
			RestartBackoffMin: time.Second,
			RestartBackoffMax: 60 * time.Second,
			CrashLoopLimit:    5,
			CrashLoopWindow:   2 * time.Minute,
			ShutdownGrace:     10 * time.Second,
			HealthInterval:    30 * time.Second,
		},
		Bus: BusConfig{
			MaxAttempts: 8,
			BaseBackoff: 500 * time.Millisecond,
			MaxBackoff:  5 * time.Minute,
			Retention:   168 * time.Hour,
		},
		Limits: LimitsConfig{
			MemoriesChars: 10000,
			PulseChars:    5000,
			SkillsChars:   20000,
		},
		Tools:         defaultTools(),
		Memory:        defaultMemory(),
		Dreaming:      defaultDreaming(),
		Harvest:       defaultHarvest(),
		Conversations: ConversationsConfig{Titles: TitlesFirstMessage, TitleRole: "scout", HistoryTokens: DefaultHistoryTokens},
		Reflection:    defaultReflection(),
		Scheduler:     defaultScheduler(),
		Workflow:      defaultWorkflow(),
		Voice:         defaultVoice(),
		Models:        ModelsConfig{Backends: map[string]ModelBackend{}, Roles: map[string][]string{}},
	}
}

// Error is a configuration error: bad YAML, an unknown key, a value of the
// wrong type, an invalid value or a bad environment override. Callers detect
// it with errors.As; the command line exits with status 2 on it.
type Error struct {
	// File is the config file; empty when the value came from the
	// environment or is a default.
	File string
	// Line is the 1-based line in File, 0 when unknown.
	Line int
	// Key is the dotted key path ("log.level", "web.listen").
	Key string
	// Msg describes the problem; it names the key.
	Msg string
	// Var is the environment variable the bad value came from, if any.
	Var string
}

func (e *Error) Error() string {
	switch {
	case e.Var != "":
		return fmt.Sprintf("environment variable %s: %s", e.Var, e.Msg)
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	default:
		return "config: " + e.Msg
	}
}

// meta is what Load learned besides the values: where each key was set, the
// raw extension sections and the warnings.
type meta struct {
	file    string
	env     []string
	extIDs  map[string]bool
	secrets *secretContext
	anchors map[string]ast.Node

	mu       sync.Mutex
	lines    map[string]int    // key path → line in file
	envVars  map[string]string // key path → environment variable that set it
	sections map[string]ast.Node
	enabled  map[string]bool // extension id → `enabled` from the file
	enEnv    map[string]bool // extension id → REVERIE_<ID>__ENABLED
	warnings []string
}

func (m *meta) warn(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := fmt.Sprintf(format, args...)
	for _, have := range m.warnings {
		if have == w {
			return
		}
	}
	m.warnings = append(m.warnings, w)
}

// Load reads the configuration file at path (a missing file means the
// defaults), applies the environment overrides from env (os.Environ()
// format) and returns the result. extIDs are the ids of the registered
// extensions: their top-level sections are kept for DecodeExtension. Load
// does not validate values; call Validate. Configuration problems are
// *Error.
//
// Relative secret files are resolved against the directory of path until
// SetDataDir names the data dir.
func Load(path string, env []string, extIDs []string) (*Config, error) {
	c := Default()
	base := ""
	if path != "" {
		if abs, err := filepath.Abs(path); err == nil {
			base = filepath.Dir(abs)
		}
	}
	m := &meta{
		file:     path,
		env:      append([]string(nil), env...),
		extIDs:   make(map[string]bool, len(extIDs)),
		secrets:  newSecretContext(env, base),
		lines:    map[string]int{},
		envVars:  map[string]string{},
		sections: map[string]ast.Node{},
		enabled:  map[string]bool{},
		enEnv:    map[string]bool{},
	}
	c.meta = m
	core := coreKeys()
	for _, id := range extIDs {
		if _, clash := core[id]; clash {
			return nil, fmt.Errorf("extension id %q collides with the core configuration key of the same name", id)
		}
		m.extIDs[id] = true
	}

	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// No file: the defaults.
		case err != nil:
			return nil, fmt.Errorf("read config: %w", err)
		default:
			if err := c.decodeFile(data); err != nil {
				return nil, err
			}
		}
	}
	if err := c.applyEnv(); err != nil {
		return nil, err
	}
	return &c, nil
}

// coreKeys maps the yaml names of Config's fields to their field index.
func coreKeys() map[string]int {
	t := reflect.TypeFor[Config]()
	keys := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if name := yamlName(f); name != "" {
			keys[name] = i
		}
	}
	return keys
}

// decodeFile decodes the top level: core keys into c, extension sections
// kept raw.
func (c *Config) decodeFile(data []byte) error {
	m := c.meta
	d := &decoder{file: m.file, lines: m.lines, secrets: m.secrets, warn: m.warn}
	body, err := d.parse(data)
	if err != nil {
		return err
	}
	m.anchors = d.anchors
	if body == nil {
		return nil
	}
	entries, ok := mappingEntries(body)
	if !ok {
		return d.errf(body, "", "the file must be a mapping of settings, got %s", describe(body))
	}
	core := coreKeys()
	rv := reflect.ValueOf(c).Elem()
	seen := map[string]int{}
	for _, e := range entries {
		key, err := d.keyString(e)
		if err != nil {
			return err
		}
		line := lineOf(e.Key)
		if prev, dup := seen[key]; dup {
			return d.errAt(line, key, "duplicate key %q (first set on line %d)", key, prev)
		}
		seen[key] = line
		if idx, ok := core[key]; ok {
			m.lines[key] = line
			if err := d.decode(e.Value, rv.Field(idx), key); err != nil {
				return err
			}
			continue
		}
		if m.extIDs[key] {
			if err := c.keepSection(d, key, e.Value, line); err != nil {
				return err
			}
			continue
		}
		cands := make([]string, 0, len(core)+len(m.extIDs))
		for k := range core {
			cands = append(cands, k)
		}
		for k := range m.extIDs {
			cands = append(cands, k)
		}
		return d.errAt(line, key, "unknown key %q%s", key, suggest(key, cands))
	}
	return nil
}

// keepSection stores an extension section and checks its `enabled` key.
func (c *Config) keepSection(d *decoder, id string, n ast.Node, line int) error {
	m := c.meta
	m.lines[id] = line
	n, err := d.resolve(n)
	if err != nil {
		return err
	}
	if isNull(n) {
		return nil
	}
	entries, ok := mappingEntries(n)
	if !ok {
		return d.errf(n, id, "%s: expected a mapping of settings, got %s%s", id, describe(n), colonHint(n))
	}
	for _, e := range entries {
		key, err := d.keyString(e)
		if err != nil {
			return err
		}
		if key != "enabled" {
			continue
		}
		var on bool
		path := id + ".enabled"
		if err := d.decode(e.Value, reflect.ValueOf(&on).Elem(), path); err != nil {
			return err
		}
		m.lines[path] = lineOf(e.Key)
		if v, _ := d.resolve(e.Value); !isNull(v) {
			m.enabled[id] = on
		}
	}
	m.sections[id] = n
	return nil
}

// SetDataDir sets the directory that relative secret files ({file: path})
// are resolved against, for secrets already decoded and later ones.
func (c *Config) SetDataDir(dir string) {
	if c.meta == nil {
		c.meta = &meta{secrets: newSecretContext(nil, dir)}
		return
	}
	c.meta.secrets.setBase(dir)
}

// Warnings returns what is allowed but discouraged, e.g. a secret written
// inline in the file, or an environment variable for a section this build
// does not have. Extension sections add their warnings when decoded, so read
// this again after the extensions were initialised.
func (c *Config) Warnings() []string {
	if c.meta == nil {
		return nil
	}
	c.meta.mu.Lock()
	defer c.meta.mu.Unlock()
	return append([]string(nil), c.meta.warnings...)
}

// File returns the path the configuration was loaded from ("" for Default).
func (c *Config) File() string {
	if c.meta == nil {
		return ""
	}
	return c.meta.file
}

// Location returns the configured time zone, or time.Local when it does not
// load (Validate reports that).
func (c *Config) Location() *time.Location {
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil || c.Timezone == "" {
		return time.Local
	}
	return loc
}

// invalid builds the *Error for a bad value at key path, citing where the
// value came from (environment variable or file line).
func (c *Config) invalid(key, format string, args ...any) *Error {
	e := &Error{Key: key, Msg: key + ": " + fmt.Sprintf(format, args...)}
	if c.meta == nil {
		return e
	}
	c.meta.mu.Lock()
	defer c.meta.mu.Unlock()
	if v, ok := c.meta.envVars[key]; ok {
		e.Var = v
		return e
	}
	if line, ok := c.meta.lines[key]; ok {
		e.File, e.Line = c.meta.file, line
	}
	return e
}

// Validate checks the core values. It returns the first problem as an
// *Error naming the key and where its value came from.
func (c *Config) Validate() error {
	if c.Timezone == "" {
		return c.invalid("timezone", "must not be empty (use \"Local\" for the host's zone)")
	}
	if _, err := time.LoadLocation(c.Timezone); err != nil {
		return c.invalid("timezone", "unknown time zone %q (use an IANA name such as \"Europe/Berlin\", or \"Local\")", c.Timezone)
	}
	if !validLanguage(c.Language) {
		return c.invalid("language", "%q is not a language code (use e.g. \"en\", \"de\", \"zh\")", c.Language)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return c.invalid("log.level", "unknown level %q (want debug, info, warn or error)", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return c.invalid("log.format", "unknown format %q (want text or json)", c.Log.Format)
	}
	switch c.Conversations.Titles {
	case TitlesFirstMessage, TitlesModel:
	default:
		return c.invalid("conversations.titles", "unknown mode %q (want first_message or model)", c.Conversations.Titles)
	}
	if c.Conversations.TitleRole == "" {
		return c.invalid("conversations.title_role", "must name a model role (scout, compaction, main, …)")
	}
	if c.Conversations.HistoryTokens < 0 {
		return c.invalid("conversations.history_tokens", "must be 0 (no budget) or a number of tokens, got %d", c.Conversations.HistoryTokens)
	}
	type check struct {
		key string
		bad bool
		msg string
	}
	s, b, l := c.Supervisor, c.Bus, c.Limits
	checks := []check{
		{"log.max_size_mb", c.Log.MaxSizeMB <= 0, "must be positive"},
		{"log.max_backups", c.Log.MaxBackups < 0, "must not be negative"},
		{"supervisor.restart_backoff_min", s.RestartBackoffMin <= 0, "must be positive"},
		{"supervisor.restart_backoff_max", s.RestartBackoffMax < s.RestartBackoffMin, "must not be less than restart_backoff_min"},
		{"supervisor.crash_loop_limit", s.CrashLoopLimit < 1, "must be at least 1"},
		{"supervisor.crash_loop_window", s.CrashLoopWindow <= 0, "must be positive"},
		{"supervisor.shutdown_grace", s.ShutdownGrace < 0, "must not be negative"},
		{"supervisor.health_interval", s.HealthInterval <= 0, "must be positive"},
		{"bus.max_attempts", b.MaxAttempts < 1, "must be at least 1"},
		{"bus.base_backoff", b.BaseBackoff <= 0, "must be positive"},
		{"bus.max_backoff", b.MaxBackoff < b.BaseBackoff, "must not be less than base_backoff"},
		{"bus.retention", b.Retention <= 0, "must be positive"},
		{"limits.memories_chars", l.MemoriesChars <= 0, "must be positive"},
		{"limits.pulse_chars", l.PulseChars <= 0, "must be positive"},
		{"limits.skills_chars", l.SkillsChars <= 0, "must be positive"},
	}
	for _, ch := range checks {
		if ch.bad {
			return c.invalid(ch.key, "%s", ch.msg)
		}
	}
	if err := c.validateTools(); err != nil {
		return err
	}
	if err := c.validateMemory(); err != nil {
		return err
	}
	if err := c.validateDreaming(); err != nil {
		return err
	}
	if err := c.validateBackground(); err != nil {
		return err
	}
	if err := c.validateScheduler(); err != nil {
		return err
	}
	if err := c.validateWorkflow(); err != nil {
		return err
	}
	if err := c.validateModels(); err != nil {
		return err
	}
	return c.validateVoice()
}

// validLanguage accepts BCP-47-like codes: "en", "pt-BR", "zh-Hans".
func validLanguage(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	for i, part := range strings.Split(s, "-") {
		if part == "" {
			return false
		}
		for _, r := range part {
			isLetter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
			if !isLetter && (i == 0 || r < '0' || r > '9') {
				return false
			}
		}
		if i == 0 && (len(part) < 2 || len(part) > 3) {
			return false
		}
	}
	return true
}

// suggest returns ` (did you mean "x"?)` for the closest candidate within
// two edits, else "".
func suggest(key string, cands []string) string {
	sort.Strings(cands)
	best, bestD := "", 3
	for _, c := range cands {
		if d := editDistance(key, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
