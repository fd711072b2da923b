package clikit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func TestFailoverAndSnapshot(t *testing.T) {
	syncer := func(d binlogstream.DSN) binlogstream.SyncerConfig {
		return binlogstream.SyncerConfig{DSN: d, ServerID: 7, Flavor: "mariadb"}
	}
	f, err := Failover(nil, syncer)
	require.NoError(t, err)
	assert.Nil(t, f, "no servers, no failover")
	f, err = Failover([]binlogstream.DSN{{User: "u", Host: "127.0.0.1", Port: 3306}}, syncer)
	require.NoError(t, err)
	require.NotNil(t, f)
	assert.NotNil(t, f.Resolver)
	_, err = Failover([]binlogstream.DSN{{User: "u", Host: "127.0.0.1", Port: 3306}}, func(d binlogstream.DSN) binlogstream.SyncerConfig {
		return binlogstream.SyncerConfig{DSN: d} // no server id: refused
	})
	assert.Error(t, err)

	s := Snapshot(nil, 2, 500, binlogstream.KeylessSkip)
	assert.True(t, s.Tables.Match("any", "table"), "every table without --tables")
	assert.Equal(t, 2, s.Readers)
	assert.Equal(t, 500, s.ChunkRows)
	assert.Equal(t, binlogstream.KeylessSkip, s.Keyless)
	only, err := binlogstream.ParseTablePatterns("app.t")
	require.NoError(t, err)
	assert.False(t, Snapshot(only, 0, 0, binlogstream.KeylessRefuse).Tables.Match("app", "u"))
}

// TestKeyless: --snapshot-keyless takes refuse or skip, and a
// SnapshotKeyError becomes the commands' message naming every table and
// both ways out, still matching ErrNoSnapshotKey.
func TestKeyless(t *testing.T) {
	for s, want := range map[string]binlogstream.KeylessPolicy{"refuse": binlogstream.KeylessRefuse, "skip": binlogstream.KeylessSkip} {
		got, err := ParseKeyless(s)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseKeyless("read")
	assert.EqualError(t, err, `--snapshot-keyless "read": want refuse or skip`)

	err = ExplainSnapshotKey(fmt.Errorf("run: %w", &binlogstream.SnapshotKeyError{Tables: []string{"d.b", "d.d"}}))
	assert.ErrorIs(t, err, binlogstream.ErrNoSnapshotKey)
	assert.Contains(t, err.Error(), "--snapshot: `d`.`b`, `d`.`d`: no primary key")
	assert.Contains(t, err.Error(), "--tables")
	assert.Contains(t, err.Error(), "--snapshot-keyless skip")
	other := errors.New("other")
	assert.Equal(t, other, ExplainSnapshotKey(other))
}
