package clikit

import (
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

	s := Snapshot(nil, 2, 500)
	assert.True(t, s.Tables.Match("any", "table"), "every table without --tables")
	assert.Equal(t, 2, s.Readers)
	assert.Equal(t, 500, s.ChunkRows)
	only, err := binlogstream.ParseTablePatterns("app.t")
	require.NoError(t, err)
	assert.False(t, Snapshot(only, 0, 0).Tables.Match("app", "u"))
}
