package binlogstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// TestNoSnapshotNoComponent: a streamer with no Config.Snapshot, no
// snapshot in its token and no SnapshotTable call holds no snapshot
// component while it delivers, so an event's way from the source to the
// listeners passes through no snapshot code. SnapshotTable during the Run
// opens one at the next point between transactions: the fake source
// cannot read tables, so the Run then fails saying so.
func TestNoSnapshotNoComponent(t *testing.T) {
	bl := th.Seed001(th.MariaDB)
	last := bl.Events[len(bl.Events)-1]
	end := binlogstream.Position{File: last.File, Offset: uint64(last.End)}
	gtid, err := binlogstream.StartAtGTID(string(bl.Flavor), "")
	require.NoError(t, err)
	starts := map[string]binlogstream.ResumePosition{
		"file": binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}),
		"gtid": gtid,
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			for _, ask := range []bool{false, true} {
				s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: th.NewFakeSource(bl), Start: start})
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				events, withComponent := 0, 0
				s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
					events++
					if binlogstream.SnapshotRunning(s) {
						withComponent++
					}
					if ask && events == 2 {
						s.SnapshotTable("app", "users")
					}
					if ev.End == end {
						cancel()
					}
					return nil
				})
				err = s.Run(ctx)
				cancel()
				if !ask {
					require.ErrorIs(t, err, context.Canceled, "the Run reached the binlog's end")
					require.Greater(t, events, 10)
					require.Zero(t, withComponent, "events delivered with a snapshot component")
					continue
				}
				require.ErrorContains(t, err, "cannot read tables")
				require.Less(t, events, len(bl.Events), "SnapshotTable opened a snapshot before the binlog's end")
			}
		})
	}
}
