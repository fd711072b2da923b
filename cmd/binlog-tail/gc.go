package main

import "runtime/debug"

// gcPercent is binlog-tail's GOGC unless GOGC is set. Most of a run's
// heap is short-lived (decoded rows and chunks, lines, tokens) and the
// live part is small (bounded queues of events and chunks), so
// collecting less often than Go's default of 100 costs little memory and
// takes GC marking and assists out of the CPU a row costs
// (BenchmarkRealSnapshot and BenchmarkRealMariaDB, docs/performance.md).
// binlog-publish and binlog-replicate keep Go's default: a publisher
// holds a whole source transaction in memory up to --spool-mib, and
// four times its live heap more would be too much there.
const gcPercent = 400

// tuneGC sets the collector to gcPercent unless getenv("GOGC") is set,
// and returns the GOGC in effect.
func tuneGC(getenv func(string) string) int {
	if getenv("GOGC") != "" {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(gcPercent)
	return gcPercent
}
