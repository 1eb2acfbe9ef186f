package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateScheduler(t *testing.T) {
	tests := []struct {
		name, yaml, key, message string
		line                     int
	}{
		{name: "negative catch-up window", yaml: "scheduler:\n  catch_up_window: -1h\n", key: "scheduler.catch_up_window", line: 2, message: "must not be negative"},
		{name: "zero run timeout", yaml: "scheduler:\n  run_timeout: 0s\n", key: "scheduler.run_timeout", line: 2, message: "must be positive"},
		{name: "no parallel runs", yaml: "scheduler:\n  max_parallel: 0\n", key: "scheduler.max_parallel", line: 2, message: "at least 1"},
		{name: "short retention", yaml: "scheduler:\n  receipt_retention: 1h\n", key: "scheduler.receipt_retention", line: 2, message: "at least 24h"},
		{name: "heartbeat too often", yaml: "scheduler:\n  heartbeat:\n    interval: 10s\n", key: "scheduler.heartbeat.interval", line: 3, message: "at least 1m"},
		{name: "half quiet hours", yaml: "scheduler:\n  heartbeat:\n    quiet_end: \"\"\n", key: "scheduler.heartbeat.quiet_start", message: "both"},
		{name: "bad quiet hour", yaml: "scheduler:\n  heartbeat:\n    quiet_start: \"25:00\"\n", key: "scheduler.heartbeat.quiet_start", line: 3, message: "not HH:MM"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tc.yaml), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate()
			var cerr *Error
			if !errors.As(err, &cerr) || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("Validate() = %v, want an *Error containing %q", err, tc.message)
			}
			if cerr.Key != tc.key || cerr.Line != tc.line {
				t.Errorf("key=%q line=%d, want key=%q line=%d", cerr.Key, cerr.Line, tc.key, tc.line)
			}
		})
	}
	c, err := Load(writeConfig(t, "scheduler:\n  catch_up_window: 0s\n  heartbeat:\n    interval: 5m\n    quiet_start: \"\"\n    quiet_end: \"\"\n"),
		[]string{"REVERIE_SCHEDULER__HEARTBEAT__ENABLED=false"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if h := c.Scheduler.Heartbeat; h.Enabled || h.Interval != 5*time.Minute || h.QuietStart != "" || c.Scheduler.CatchUpWindow != 0 {
		t.Errorf("decoded %+v", c.Scheduler)
	}
}
