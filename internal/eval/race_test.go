//go:build race

package eval

// raceEnabled: the race detector slows the cross-validation about tenfold;
// .ci/run runs it without -race.
const raceEnabled = true
