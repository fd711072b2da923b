package binlogstream_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// The watermark chunk reads MySQL gets, run against real MariaDB under
// the heavy-writes test: three writers commit in a tight loop around the
// chunk being read (updates, deletes, inserts either side, key moves
// across the boundary, multi-row statements split over rows events), and
// the folded output must end equal to the table with no rule failing.
// The server syncs its binlog at every commit (sync_binlog=1): the fsync
// lies between a commit's binlog write and InnoDB making it visible, so
// a low watermark often counts a transaction a plain read cannot see.

// snapServerArgs are more mariadbd options for snapServer.
var snapServerArgs []string

func watermarks(t *testing.T, naive string) {
	binlogstream.SnapshotWatermarks(true)
	binlogstream.SnapshotWatermarkNaive(naive)
	snapServerArgs = []string{"--sync-binlog=1"}
	t.Cleanup(func() {
		binlogstream.SnapshotWatermarks(false)
		binlogstream.SnapshotWatermarkNaive("")
		snapServerArgs = nil
	})
}

func TestSnapshotWatermarkUnderHeavyWrites(t *testing.T) {
	watermarks(t, "")
	require.NoError(t, snapshotUnderWrites(t, 300_000, 12))
}

// TestSnapshotWatermarkNegativeControl: with the low watermark taken
// after the SELECT, the changes the read missed are not folded in and the
// fold catches it.
func TestSnapshotWatermarkNegativeControl(t *testing.T) {
	watermarks(t, "low-after")
	err := snapshotUnderWrites(t, 60_000, 0)
	require.Error(t, err)
	t.Log(err)
}

// TestSnapshotWatermarkPlainReadLoses: a plain (consistent, unlocked)
// read folded from a low watermark taken just before it loses the
// transactions logged before the watermark and not yet visible. The race
// needs a commit inside that window, so the control runs until one
// snapshot goes wrong (about every second run here), at most 12 times.
func TestSnapshotWatermarkPlainReadLoses(t *testing.T) {
	watermarks(t, "no-locking")
	for run := 1; run <= 12; run++ {
		if err := snapshotUnderWrites(t, 100_000, 0); err != nil {
			t.Logf("run %d: %v", run, err)
			return
		}
	}
	t.Fatal("12 snapshots with plain reads all folded equal to the table")
}

// TestSnapshotWatermarkAwkwardTables: the awkward keys (a VARCHAR key in a
// case-insensitive collation, a composite key, a UNIQUE key only, an empty
// table, a table without a key refused) with watermark reads.
func TestSnapshotWatermarkAwkwardTables(t *testing.T) {
	watermarks(t, "")
	TestSnapshotAwkwardTables(t)
}

// TestSnapshotWatermarkCrashes: consumer crashes during and between
// watermark chunks resume to the output of an uninterrupted run.
func TestSnapshotWatermarkCrashes(t *testing.T) {
	watermarks(t, "")
	TestSnapshotCrashesMatchUninterrupted(t)
}
