package config

import "time"

// HarvestConfig is the `harvest:` section: the memory harvest.
type HarvestConfig struct {
	Enabled bool `yaml:"enabled"`
	// MessageThreshold: harvest a conversation after this many new user messages.
	MessageThreshold int `yaml:"message_threshold"`
	// IdleTimeout and IdleMinMessages: or after this long without activity
	// when at least IdleMinMessages new user messages are waiting.
	IdleTimeout     time.Duration `yaml:"idle_timeout"`
	IdleMinMessages int           `yaml:"idle_min_messages"`
	// MaxMessageChars: longer messages are cut in the middle.
	MaxMessageChars int `yaml:"max_message_chars"`
	// MaxTranscriptChars caps the transcript a worker reads.
	MaxTranscriptChars int `yaml:"max_transcript_chars"`
}

// ReflectionConfig is the `reflection:` section: the reflection cycle.
type ReflectionConfig struct {
	Enabled bool `yaml:"enabled"`
	// ConsecutiveFailures pauses a task after this many failed runs in a row.
	ConsecutiveFailures int `yaml:"consecutive_failures"`
	// BatchThreshold: a full cycle after this many completed sub-sessions.
	BatchThreshold int `yaml:"batch_threshold"`
	// Fallback: a cycle after this long without any trigger.
	Fallback time.Duration `yaml:"fallback"`
}

func defaultHarvest() HarvestConfig {
	return HarvestConfig{Enabled: true, MessageThreshold: 20, IdleTimeout: 15 * time.Minute, IdleMinMessages: 5,
		MaxMessageChars: 2000, MaxTranscriptChars: 60_000}
}

func defaultReflection() ReflectionConfig {
	return ReflectionConfig{Enabled: true, ConsecutiveFailures: 3, BatchThreshold: 10, Fallback: 6 * time.Hour}
}

func (c *Config) validateBackground() error {
	h, r := c.Harvest, c.Reflection
	checks := []struct {
		key string
		bad bool
		msg string
	}{
		{"harvest.message_threshold", h.MessageThreshold < 1, "must be at least 1"},
		{"harvest.idle_timeout", h.IdleTimeout < time.Minute, "must be at least 1m"},
		{"harvest.idle_min_messages", h.IdleMinMessages < 1, "must be at least 1"},
		{"harvest.max_message_chars", h.MaxMessageChars < 100, "must be at least 100"},
		{"harvest.max_transcript_chars", h.MaxTranscriptChars < h.MaxMessageChars, "must not be less than max_message_chars"},
		{"reflection.consecutive_failures", r.ConsecutiveFailures < 1, "must be at least 1"},
		{"reflection.batch_threshold", r.BatchThreshold < 1, "must be at least 1"},
		{"reflection.fallback", r.Fallback < time.Minute, "must be at least 1m"},
	}
	for _, ch := range checks {
		if ch.bad {
			return c.invalid(ch.key, "%s", ch.msg)
		}
	}
	return nil
}
