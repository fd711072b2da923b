package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTuneGC: binlog-tail collects at GOGC 400 unless GOGC is set, and
// then as it says.
func TestTuneGC(t *testing.T) {
	before := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(before)

	debug.SetGCPercent(100)
	require.Equal(t, 400, tuneGC(func(string) string { return "" }))
	require.Equal(t, 400, debug.SetGCPercent(-1))

	debug.SetGCPercent(50) // as the runtime sets it from GOGC=50
	require.Equal(t, 50, tuneGC(func(k string) string { return map[string]string{"GOGC": "50"}[k] }))
	require.Equal(t, 50, debug.SetGCPercent(-1))
}
