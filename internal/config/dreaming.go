package config

import (
	"fmt"
	"time"
)

// DreamingConfig is the `dreaming:` section: nightly memory consolidation.
type DreamingConfig struct {
	// Enabled runs the nightly dream; /dream and `reverie dream` work either way.
	Enabled bool `yaml:"enabled"`
	// At is the time of day (HH:MM, in the configured time zone).
	At string `yaml:"at"`
	// DedupThreshold: memories at cosine similarity ≥ this (every two of a
	// group) are merged when the model says they state one fact.
	DedupThreshold float64 `yaml:"dedup_threshold"`
	// ContradictionFloor: pairs between this and dedup_threshold are checked
	// for contradictions, at most MaxContradictions per dream.
	ContradictionFloor float64 `yaml:"contradiction_floor"`
	MaxContradictions  int     `yaml:"max_contradictions"`
	// StaleDays and StaleMinAccess: memories not recalled for stale_days with
	// fewer than stale_min_access recalls are pruned (closed, reversibly);
	// memories the user asked for explicitly never are.
	StaleDays      int `yaml:"stale_days"`
	StaleMinAccess int `yaml:"stale_min_access"`
	// ExportTop is how many memories (most recalled first) MEMORIES.txt gets.
	ExportTop int `yaml:"export_top"`
	// EpisodeDays: conversation sessions whose last message is older than
	// this are condensed into facts (their episodes closed, reversibly).
	EpisodeDays int `yaml:"episode_days"`
	// MaxDropShare refuses a consolidation that would remove more than this
	// share of a component's entries.
	MaxDropShare float64 `yaml:"max_drop_share"`
}

func defaultDreaming() DreamingConfig {
	return DreamingConfig{Enabled: true, At: "01:00", DedupThreshold: 0.85, ContradictionFloor: 0.5, MaxContradictions: 20,
		StaleDays: 90, StaleMinAccess: 3, ExportTop: 50, EpisodeDays: 7, MaxDropShare: 0.25}
}

// DreamTime parses dreaming.at.
func (d DreamingConfig) DreamTime() (hour, minute int, err error) {
	t, err := time.Parse("15:04", d.At)
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not HH:MM", d.At)
	}
	return t.Hour(), t.Minute(), nil
}

func (c *Config) validateDreaming() error {
	d := c.Dreaming
	if _, _, err := d.DreamTime(); err != nil {
		return c.invalid("dreaming.at", "%v", err)
	}
	switch {
	case d.DedupThreshold <= 0 || d.DedupThreshold > 1:
		return c.invalid("dreaming.dedup_threshold", "must be in (0, 1]")
	case d.ContradictionFloor <= 0 || d.ContradictionFloor >= d.DedupThreshold:
		return c.invalid("dreaming.contradiction_floor", "must be above 0 and below dedup_threshold")
	case d.MaxContradictions < 0:
		return c.invalid("dreaming.max_contradictions", "must not be negative")
	case d.StaleDays < 1:
		return c.invalid("dreaming.stale_days", "must be at least 1")
	case d.EpisodeDays < 1:
		return c.invalid("dreaming.episode_days", "must be at least 1")
	case d.StaleMinAccess < 0:
		return c.invalid("dreaming.stale_min_access", "must not be negative")
	case d.ExportTop < 1:
		return c.invalid("dreaming.export_top", "must be at least 1")
	case d.MaxDropShare < 0 || d.MaxDropShare > 1:
		return c.invalid("dreaming.max_drop_share", "must be between 0 and 1")
	}
	return nil
}
