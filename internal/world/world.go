// Package world is the durable world state: world_state.json in the data
// dir, a small versioned document of what the assistant holds true about its
// situation (who it talks to, the current project, the topics in play, the
// user's goals and standing rules).
//
// Schema versions: every file carries "version". Older files are upgraded on
// load by an explicit chain of migrations (migrate.go: version N to N+1,
// version 0 being the unversioned llm_thalamus layout); the file is then
// rewritten in the current layout after a copy of the original is kept as
// world_state.json.v<N>.bak. A file written by a newer Reverie (a version
// above Version) is refused with ErrFutureVersion and left untouched.
//
// Durability: Save commits atomically (temp file, fsync, rename, fsync of
// the directory), so a crash leaves either the old or the new file. Bad
// input never loses data: a file that does not parse, has unknown fields or
// invalid values is moved aside to world_state.json.corrupt-<UTC timestamp>
// and a fresh default is written.
//
// Changes: Store holds the state of a running agent. It applies typed ops
// (ops.go; the world_apply_ops tool decodes them from JSON) all or nothing,
// saves, and then tells its Changed hook, which records the change in the
// data dir's history.
//
// Concurrency: the functions here are stateless; Store is safe for
// concurrent use and hands out copies. One process owns a data dir (see
// datadir.Lock).
package world

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	_ "time/tzdata" // time zones validate on hosts without a zoneinfo database

	"github.com/reverie-ai/reverie/internal/atomicfile"
)

// FileName is the world state file inside the data dir.
const FileName = "world_state.json"

// Version is the schema version this build writes; it reads every version
// from 0 up to it (see migrations).
const Version = 3

// ErrFutureVersion is returned (wrapped) for a file written by a newer
// Reverie: its version is above Version. Such a file is never rewritten.
var ErrFutureVersion = errors.New("world state was written by a newer version of Reverie")

// DefaultAgentName is the assistant's name in a fresh world state.
const DefaultAgentName = "Reverie"

// State is the world state document.
type State struct {
	// Version is the schema version (Version).
	Version int `json:"version"`
	// UpdatedAt is when the state last changed.
	UpdatedAt time.Time `json:"updated_at"`
	// Identity is who is who.
	Identity Identity `json:"identity"`
	// Project is the project currently in focus, "" when none.
	Project string `json:"project"`
	// Topics are the subjects of the recent conversation.
	Topics []string `json:"topics"`
	// Goals are the user's stated goals.
	Goals []Goal `json:"goals"`
	// Rules are standing instructions from the user ("answer in German").
	Rules []string `json:"rules"`
	// TimeZone is the user's current IANA time zone ("Europe/Berlin"), ""
	// when unknown (the configured zone applies). Since version 2.
	TimeZone string `json:"timezone"`
}

// Identity names the participants.
type Identity struct {
	// UserName is how the user wants to be addressed, "" when unknown.
	UserName string `json:"user_name"`
	// SessionUserName is the name the user gave in the current session
	// when it differs from UserName (llm_thalamus's
	// identity.session_user_name), "" when none.
	SessionUserName string `json:"session_user_name"`
	// AgentName is the assistant's name.
	AgentName string `json:"agent_name"`
	// UserLocation is where the user is (city, region), "" when unknown.
	UserLocation string `json:"user_location"`
}

// GoalStatus is the state of a Goal.
type GoalStatus string

// Goal states.
const (
	GoalActive GoalStatus = "active"
	GoalDone   GoalStatus = "done"
)

// Goal is one of the user's goals.
type Goal struct {
	Text   string     `json:"text"`
	Status GoalStatus `json:"status"`
}

// Default returns a fresh world state stamped with now.
func Default(now time.Time) *State {
	return &State{
		Version:   Version,
		UpdatedAt: now.UTC().Truncate(time.Second),
		Identity:  Identity{AgentName: DefaultAgentName},
		Topics:    []string{},
		Goals:     []Goal{},
		Rules:     []string{},
	}
}

// Validate checks the version and the values.
func (s *State) Validate() error {
	if s.Version != Version {
		return fmt.Errorf("world state version %d is not supported (this build writes version %d)", s.Version, Version)
	}
	if err := checkZone(s.TimeZone); err != nil {
		return err
	}
	for i, g := range s.Goals {
		if strings.TrimSpace(g.Text) == "" {
			return fmt.Errorf("goal %d has no text", i+1)
		}
		switch g.Status {
		case GoalActive, GoalDone:
		default:
			return fmt.Errorf("goal %d has unknown status %q (want %q or %q)", i+1, g.Status, GoalActive, GoalDone)
		}
	}
	return nil
}

// normalize turns null lists into empty ones so the file always shows [].
func (s *State) normalize() {
	if s.Topics == nil {
		s.Topics = []string{}
	}
	if s.Goals == nil {
		s.Goals = []Goal{}
	}
	if s.Rules == nil {
		s.Rules = []string{}
	}
}

// Encode returns the file content for s: indented JSON with a final newline.
func Encode(s *State) ([]byte, error) {
	c := *s
	c.normalize()
	data, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode world state: %w", err)
	}
	return append(data, '\n'), nil
}

// Decode parses file content of any supported version, migrates it to
// Version and validates it strictly: unknown fields, trailing data and bad
// values are errors; a version above Version is ErrFutureVersion.
func Decode(data []byte) (*State, error) {
	s, _, err := decode(data)
	return s, err
}

// decode is Decode that also returns the version the content had.
func decode(data []byte) (*State, int, error) {
	doc, from, err := parseDocument(data)
	if err != nil {
		return nil, from, err
	}
	if from > Version {
		return nil, from, fmt.Errorf("%w: the file has version %d and this build reads versions up to %d; upgrade Reverie (the file is left as it is)",
			ErrFutureVersion, from, Version)
	}
	if err := migrate(doc, from); err != nil {
		return nil, from, err
	}
	current, err := json.Marshal(doc)
	if err != nil {
		return nil, from, fmt.Errorf("parse world state: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(current))
	dec.DisallowUnknownFields()
	var s State
	if err := dec.Decode(&s); err != nil {
		return nil, from, fmt.Errorf("parse world state: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, from, err
	}
	s.normalize()
	return &s, from, nil
}

// parseDocument splits content into its top-level fields and reads the
// version (0 when absent).
func parseDocument(data []byte) (document, int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var doc document
	if err := dec.Decode(&doc); err != nil {
		return nil, 0, fmt.Errorf("parse world state: %w", err)
	}
	if doc == nil {
		return nil, 0, errors.New("parse world state: not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, 0, errors.New("parse world state: data after the JSON object")
	}
	raw, ok := doc["version"]
	if !ok {
		return doc, 0, nil
	}
	var v int
	if err := json.Unmarshal(raw, &v); err != nil || v < 0 {
		return nil, 0, fmt.Errorf("parse world state: version %s is not a whole number ≥ 0", raw)
	}
	return doc, v, nil
}

// Check reports whether dir's world state file is usable without changing
// anything. A missing file is fine (it is created at start), and so is an
// older version (it is migrated at start).
func Check(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", FileName, err)
	}
	if _, err := Decode(data); err != nil {
		return fmt.Errorf("%s: %w", FileName, err)
	}
	return nil
}

// load reads dir's world state. A missing file is created with the
// defaults; an older version is migrated and rewritten (the original kept as
// world_state.json.v<N>.bak); a corrupt one is moved aside (logged at warn
// level) and replaced by the defaults. Errors are I/O failures and a file of
// a newer version (ErrFutureVersion), which is left untouched.
func load(dir string, logger *slog.Logger, now func() time.Time) (*State, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		s := Default(now())
		if err := Save(dir, s); err != nil {
			return nil, err
		}
		logger.Info("created world state", "path", path)
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("read world state: %w", err)
	}
	s, from, derr := decode(data)
	if derr == nil {
		if from < Version {
			if err := keepOldVersion(path, from, data); err != nil {
				return nil, err
			}
			if s.UpdatedAt.IsZero() {
				s.UpdatedAt = now().UTC().Truncate(time.Second)
			}
			if err := Save(dir, s); err != nil {
				return nil, err
			}
			logger.Info("migrated world state", "from_version", from, "to_version", Version, "path", path)
		}
		return s, nil
	}
	if errors.Is(derr, ErrFutureVersion) {
		return nil, fmt.Errorf("%s: %w", path, derr)
	}
	aside, err := moveAside(path, now())
	if err != nil {
		return nil, fmt.Errorf("world state is unusable (%v) and could not be moved aside: %w", derr, err)
	}
	s = Default(now())
	if err := Save(dir, s); err != nil {
		return nil, err
	}
	logger.Warn("world state was unusable; kept it aside and started from the defaults",
		"err", derr, "kept", aside, "path", path)
	return s, nil
}

// keepOldVersion writes the content of a file about to be migrated to
// path.v<from>.bak (replacing an older backup of the same version).
func keepOldVersion(path string, from int, data []byte) error {
	if err := atomicfile.Write(fmt.Sprintf("%s.v%d.bak", path, from), data, 0o600); err != nil {
		return fmt.Errorf("keep world state version %d before migrating it: %w", from, err)
	}
	return nil
}

// moveAside renames path to path.corrupt-<UTC timestamp>, never replacing
// an earlier one.
func moveAside(path string, now time.Time) (string, error) {
	base := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	target := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
			break
		}
		target = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(path, target); err != nil {
		return "", err
	}
	return target, nil
}

// Save validates s and commits it to dir atomically.
func Save(dir string, s *State) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("save world state: %w", err)
	}
	data, err := Encode(s)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, FileName), data, 0o600); err != nil {
		return fmt.Errorf("save world state: %w", err)
	}
	return nil
}
