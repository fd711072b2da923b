package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestReplicateVerifyGTID: in GTID mode, --verify aligns on the binlog
// positions the stream's events carry, and --verify-only compares the
// checkpoint's GTID set with the source's.
func TestReplicateVerifyGTID(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	verifySchema(t, src, 3000)
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", verifyTables, "--gtid", "--chunk", "500"}}
	res := r.run(t, "--stop-at-current")
	require.Equal(t, 0, res.code, res.stderr)
	src.Exec(t, "UPDATE d.ti SET n = n + 1 WHERE id <= 100", "DELETE FROM d.tv WHERE k = 'k0000007'")
	tgt.Exec(t, "UPDATE d.ti SET n = 0 WHERE id = 2000")
	res = r.run(t, "--verify", "--stop-at-current")
	require.Equal(t, 3, res.code, res.stderr)
	require.Contains(t, res.stderr, `{"table":"d.ti","key":{"id":2000},"diff":"changed","columns":["n"],"at":"`)
	require.Contains(t, res.stderr, `"differences":1,`)

	res = r.run(t, "--verify-only", "--repair")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, `"differences":1,"repaired":1,`)
	src.Exec(t, "UPDATE d.ti SET n = n + 1 WHERE id = 1")
	res = r.run(t, "--verify-only")
	require.Equal(t, 1, res.code, res.stderr)
	require.Contains(t, res.stderr, "--verify-only: the target's checkpoint is at GTID set ")
}
