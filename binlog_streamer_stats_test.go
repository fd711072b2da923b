package binlogstream_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// Stats.At is the end of the last delivered event in both modes; in GTID
// mode the resume position has no file to say it.
func TestStatsAtIsTheLastDeliveredEnd(t *testing.T) {
	var last binlogstream.Position
	record := func(_ int, ev binlogstream.Event) error { last = ev.End; return nil }

	g := stream(t, th.NewFakeSource(gtidWorkload(th.MariaDB, 2)), gtidStart(t, th.MariaDB), 5, record)
	require.ErrorIs(t, g.err, context.Canceled)
	assert.Empty(t, g.stats.Position.Streamed.File, "GTID mode: no file in the token")
	assert.NotEmpty(t, last.File)
	assert.Equal(t, last, g.stats.At)

	sc := scenario{bl: th.Seed001(th.MySQL)}
	f := stream(t, sc.source(), sc.start(), 3, record)
	require.ErrorIs(t, f.err, context.Canceled)
	assert.Equal(t, last, f.stats.At)
	assert.Equal(t, f.stats.Position.Streamed, f.stats.At)
}
