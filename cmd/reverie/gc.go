package main

import (
	"runtime/debug"
	"strings"
	"sync"
)

// startGCPercent is the garbage collector's pace while an agent starts (and
// for the whole of a one-shot command): building the agent allocates a few
// megabytes that are mostly still in use when it is ready, so collecting at
// the default pace (GOGC=100, a cycle at 4 MB) costs a cycle of marking on
// the start's path and frees little. The heap this leaves is returned once
// the agent is idle (footprint.Keeper), so the idle footprint does not keep it.
const startGCPercent = 400

// relaxGC sets the collector to startGCPercent and returns the function that
// sets it back (once, however often it is called). It leaves the collector
// alone when the environment sets GOGC: the user's choice wins.
func relaxGC(env []string) (restore func()) {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOGC=") {
			return func() {}
		}
	}
	prev := debug.SetGCPercent(startGCPercent)
	return sync.OnceFunc(func() { debug.SetGCPercent(prev) })
}
