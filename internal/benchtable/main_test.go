package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTable(t *testing.T) {
	in := `goos: linux
BenchmarkStreamerVsSyncer/small-rows-2   10  641269165 ns/op  1.040 reuse/syncer  1000657 streamer-events/s  1.138 streamer/syncer
BenchmarkStreamerVsSyncer/small-rows-2   10  684762972 ns/op  1.080 reuse/syncer  925335 streamer-events/s  1.183 streamer/syncer
BenchmarkTracker/file-2  1459  808610 ns/op  44.92 ns/event  96432 B/op  2002 allocs/op
--- FAIL: BenchmarkX-2
PASS
`
	var echo bytes.Buffer
	rs, err := parse(strings.NewReader(in), &echo)
	require.NoError(t, err)
	assert.Equal(t, in, echo.String(), "the input passes through")
	require.Len(t, rs, 2)
	var out bytes.Buffer
	writeTable(&out, rs)
	assert.Equal(t, `| benchmark | runs | results (mean, [min-max] over runs) |
| --- | --- | --- |
| BenchmarkStreamerVsSyncer/small-rows | 2 | 1.060 [1.040-1.080] reuse/syncer, 962996 [925335-1000657] streamer-events/s, 1.160 [1.138-1.183] streamer/syncer |
| BenchmarkTracker/file | 1 | 44.9 ns/event, 2002 allocs/op |
`, out.String())
}
