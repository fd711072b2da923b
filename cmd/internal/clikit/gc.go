package clikit

import "runtime/debug"

// GCPercent is the commands' GOGC unless GOGC is set. Most of a run's
// heap is short-lived (decoded rows and chunks, lines, tokens) and the
// live part is small (bounded queues of events and chunks), so
// collecting less often than Go's default of 100 costs little memory and
// takes GC marking and assists out of the CPU a row costs
// (BenchmarkRealSnapshot and BenchmarkRealMariaDB, docs/performance.md).
const GCPercent = 400

// TuneGC sets the collector to GCPercent unless getenv("GOGC") is set,
// and returns the GOGC in effect.
func TuneGC(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(GCPercent)
	return GCPercent
}
