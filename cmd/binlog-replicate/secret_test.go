package main

import (
	"context"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// TestDDLErrorSecretMasked: an account statement that reads as DDL on a
// table --tables matches (d.* matches d.USER) stops the run with the
// statement in the error, its password masked.
func TestDDLErrorSecretMasked(t *testing.T) {
	const pw = "Rq8-replicate-secret-31"
	pats, err := binlogstream.ParseTablePatterns("d.*")
	require.NoError(t, err)
	a := &applier{tables: map[string]*table{}, pats: pats}
	q := &replication.QueryEvent{Schema: []byte("d"), Query: []byte("CREATE USER x IDENTIFIED BY '" + pw + "'")}
	ev := binlogstream.Event{BinlogEvent: &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.QUERY_EVENT}, Event: q}}
	err = a.listen(context.Background(), ev)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `CREATE USER x IDENTIFIED BY '<secret>'`)
	assert.NotContains(t, err.Error(), pw)
}
