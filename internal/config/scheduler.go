package config

import (
	"fmt"
	"time"
)

// SchedulerConfig is the `scheduler:` section: reminders, AI tasks and
// background jobs (the time zone is the top-level timezone).
type SchedulerConfig struct {
	// CatchUpWindow: after downtime, the latest missed run of each task not
	// older than this runs once; older missed runs are recorded as skipped.
	CatchUpWindow time.Duration `yaml:"catch_up_window"`
	// RunTimeout bounds one run (a reminder, an AI task, a job).
	RunTimeout time.Duration `yaml:"run_timeout"`
	// MaxParallel bounds runs executing at once.
	MaxParallel int `yaml:"max_parallel"`
	// ReceiptRetention is how long run receipts (and finished tasks) are
	// kept.
	ReceiptRetention time.Duration   `yaml:"receipt_retention"`
	Heartbeat        HeartbeatConfig `yaml:"heartbeat"`
}

// HeartbeatConfig is `scheduler.heartbeat`: the periodic review of the
// pulse, due tasks and new events.
type HeartbeatConfig struct {
	Enabled bool `yaml:"enabled"`
	// Interval between reviews. A review where nothing changed makes no
	// model call.
	Interval time.Duration `yaml:"interval"`
	// QuietStart and QuietEnd (HH:MM, local) bound the quiet hours: no
	// review runs in between. Both empty: no quiet hours.
	QuietStart string `yaml:"quiet_start"`
	QuietEnd   string `yaml:"quiet_end"`
}

func defaultScheduler() SchedulerConfig {
	return SchedulerConfig{
		CatchUpWindow:    24 * time.Hour,
		RunTimeout:       10 * time.Minute,
		MaxParallel:      4,
		ReceiptRetention: 90 * 24 * time.Hour,
		Heartbeat:        HeartbeatConfig{Enabled: true, Interval: time.Hour, QuietStart: "23:00", QuietEnd: "07:00"},
	}
}

// MinHeartbeatInterval is the shortest heartbeat interval allowed.
const MinHeartbeatInterval = time.Minute

func (c *Config) validateScheduler() error {
	s := c.Scheduler
	h := s.Heartbeat
	switch {
	case s.CatchUpWindow < 0:
		return c.invalid("scheduler.catch_up_window", "must not be negative (0 catches nothing up)")
	case s.RunTimeout <= 0:
		return c.invalid("scheduler.run_timeout", "must be positive")
	case s.MaxParallel < 1:
		return c.invalid("scheduler.max_parallel", "must be at least 1")
	case s.ReceiptRetention < 24*time.Hour:
		return c.invalid("scheduler.receipt_retention", "must be at least 24h")
	case h.Interval < MinHeartbeatInterval:
		return c.invalid("scheduler.heartbeat.interval", "must be at least %s", MinHeartbeatInterval)
	case (h.QuietStart == "") != (h.QuietEnd == ""):
		return c.invalid("scheduler.heartbeat.quiet_start", "give both quiet_start and quiet_end, or neither")
	}
	for _, q := range []struct{ key, v string }{{"scheduler.heartbeat.quiet_start", h.QuietStart}, {"scheduler.heartbeat.quiet_end", h.QuietEnd}} {
		if q.v == "" {
			continue
		}
		if _, err := time.Parse("15:04", q.v); err != nil {
			return c.invalid(q.key, "%s", fmt.Sprintf("%q is not HH:MM", q.v))
		}
	}
	return nil
}
