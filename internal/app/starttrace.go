package app

import (
	"log/slog"
	"time"
)

// StartTraceEnv, set to 1 in the agent's environment, logs how long each
// start-up phase took (and what ran after ready) once the agent is ready:
// the profile behind the start-up figure of bench/startup.sh.
const StartTraceEnv = "REVERIE_DEBUG_START"

// startTrace records the duration of each start-up phase (nil: off).
type startTrace struct {
	phases []tracedPhase
}

type tracedPhase struct {
	name string
	took time.Duration
}

func newStartTrace(env []string) *startTrace {
	if envValue(env, StartTraceEnv) != "1" {
		return nil
	}
	return &startTrace{}
}

func (t *startTrace) phase(name string, took time.Duration) {
	if t != nil {
		t.phases = append(t.phases, tracedPhase{name, took})
	}
}

// log writes one line per phase.
func (t *startTrace) log(logger *slog.Logger) {
	if t == nil {
		return
	}
	for _, p := range t.phases {
		logger.Info("start phase", "phase", p.name, "took", p.took.String())
	}
}
