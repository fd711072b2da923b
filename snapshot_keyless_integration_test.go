package binlogstream_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestSnapshotKeylessTables: a snapshot of a database with keyed tables
// and two keyless ones (no index; a nullable UNIQUE key) is refused at
// the start of Run, before any event, with one *SnapshotKeyError naming
// both. With KeylessSkip the keyed tables are read and the keyless ones
// are not, and a keyless table created while the snapshot reads (the
// reopen after its DDL) is skipped too, even under KeylessRefuse.
func TestSnapshotKeylessTables(t *testing.T) {
	mariadb.Require(t)
	srv := snapServer(t)
	srv.Exec(t, "CREATE DATABASE app", "USE app",
		"CREATE TABLE a (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE b (v INT)",
		"CREATE TABLE c (u INT NOT NULL, v INT, UNIQUE KEY (u))",
		"CREATE TABLE d (v INT, UNIQUE KEY (v))",
		"INSERT INTO a SELECT seq, seq FROM seq_1_to_3000",
		"INSERT INTO b SELECT seq FROM seq_1_to_20",
		"INSERT INTO c SELECT seq, seq FROM seq_1_to_10",
		"INSERT INTO d SELECT seq FROM seq_1_to_5")
	pats, err := binlogstream.ParseTablePatterns("app.*")
	require.NoError(t, err)
	keys := map[string][]string{"app.a": {"id"}, "app.c": {"u"}}
	closed := make(chan struct{})
	close(closed)

	f := newSnapFold(keys)
	r := runSnapshot(t, itSource(t, srv), binlogstream.StartAt(masterPos(t, srv)),
		&binlogstream.SnapshotConfig{Tables: pats}, f, nil, closed, nil)
	var ke *binlogstream.SnapshotKeyError
	require.ErrorAs(t, r.err, &ke)
	assert.Equal(t, []string{"app.b", "app.d"}, ke.Tables)
	assert.ErrorIs(t, r.err, binlogstream.ErrNoSnapshotKey)
	assert.Contains(t, r.err.Error(), "`app`.`b`, `app`.`d`")
	assert.Zero(t, f.reads+f.changes, "nothing delivered")

	f = newSnapFold(keys)
	r = runSnapshot(t, itSource(t, srv), binlogstream.StartAt(masterPos(t, srv)),
		&binlogstream.SnapshotConfig{Tables: pats, Keyless: binlogstream.KeylessSkip}, f, nil, closed, nil)
	require.NoError(t, r.err)
	require.NoError(t, f.err)
	assert.Equal(t, 3010, f.reads, "every row of a and c, none of b and d")
	assert.Equal(t, tableRows(t, srv, "app.a", keys["app.a"]), f.rows["app.a"])
	assert.Equal(t, tableRows(t, srv, "app.c", keys["app.c"]), f.rows["app.c"])

	// A keyless table created after the start, while the reads go on.
	f = newSnapFold(keys)
	created := make(chan struct{})
	var once sync.Once
	r = runSnapshot(t, itSource(t, srv), binlogstream.StartAt(masterPos(t, srv)),
		&binlogstream.SnapshotConfig{Tables: mustPatterns(t, "app.a,app.e"), ChunkRows: 10}, f, nil, created, func(string) {
			once.Do(func() {
				go func() {
					defer close(created)
					srv.Exec(t, "CREATE TABLE app.e (v INT)")
				}()
			})
		})
	require.NoError(t, r.err)
	require.NoError(t, f.err)
	assert.Equal(t, 3000, f.reads)
}
