// Package benchtest holds what benchmarks in several packages share to
// measure themselves: the calling thread's CPU time, so that a benchmark on
// a loaded machine can report a rate over the time it ran rather than the
// time it waited.
package benchtest
