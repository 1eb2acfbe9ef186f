package app

import (
	"testing"
	"time"
)

// The router gives turns in progress half of the agent's shutdown grace, so
// a turn still running is cancelled and stored as interrupted before the
// supervisor's SIGKILL (the router's own default, 20 s, outlasted the
// default grace of 10 s).
func TestTurnGraceFitsTheShutdownGrace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shutdown time.Duration
		want     time.Duration
	}{
		{"default", 10 * time.Second, 5 * time.Second},
		{"unset", 0, 5 * time.Second},
		{"long", time.Minute, 30 * time.Second},
		{"short", time.Second, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := turnGrace(tc.shutdown); got != tc.want {
				t.Fatalf("turnGrace(%s) = %s, want %s", tc.shutdown, got, tc.want)
			}
		})
	}
}
