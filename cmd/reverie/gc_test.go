package main

import (
	"runtime/debug"
	"testing"
)

func TestRelaxGC(t *testing.T) {
	tests := []struct {
		name   string
		env    []string
		during int
	}{
		{"no GOGC: the start's pace", []string{"HOME=/x"}, startGCPercent},
		{"GOGC set: left alone", []string{"GOGC=50"}, 100},
		{"GOGC=off: left alone", []string{"A=b", "GOGC=off"}, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := debug.SetGCPercent(100)
			defer debug.SetGCPercent(prev)
			restore := relaxGC(tc.env)
			if got := debug.SetGCPercent(tc.during); got != tc.during {
				t.Errorf("GC percent after relaxGC = %d, want %d", got, tc.during)
			}
			restore()
			if got := debug.SetGCPercent(70); got != 100 {
				t.Errorf("GC percent after restore = %d, want 100", got)
			}
			// A second call (the agent's deferred one, after Settled)
			// changes nothing.
			restore()
			if got := debug.SetGCPercent(100); got != 70 {
				t.Errorf("GC percent after a second restore = %d, want 70 (left alone)", got)
			}
		})
	}
}
