package binlogstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// sourceNoFlavor is a SyncerSource on srv as a new user writes it: a DSN
// and a ServerID, no Flavor.
func sourceNoFlavor(t *testing.T, srv *mariadb.Server, flavor string) *binlogstream.SyncerSource {
	t.Helper()
	dsn, err := binlogstream.ParseDSN(srv.DSN(mariadb.ReplUser))
	require.NoError(t, err)
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: dsn, ServerID: 1001, Flavor: flavor})
	require.NoError(t, err)
	return src
}

// streamToCurrent streams from start up to the server's current position
// (StopAtCurrent) and returns the ids of the rows inserted.
func streamToCurrent(t *testing.T, src binlogstream.Source, start binlogstream.ResumePosition) ([]any, error) {
	t.Helper()
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start})
	require.NoError(t, err)
	defer s.Close()
	var ids []any
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			for _, row := range re.Rows {
				ids = append(ids, row[0])
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.StopAtCurrent(ctx); err != nil {
		return nil, err
	}
	return ids, s.Run(ctx)
}

// With no Flavor the source reads it from the server, so StopAtCurrent
// works against MariaDB; an explicit Flavor is used as given.
func TestSyncerSourceDetectsFlavor(t *testing.T) {
	srv := mariadb.Start(t, mariadb.Options{})
	srv.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)")
	ctx := context.Background()

	src := sourceNoFlavor(t, srv, "")
	start, err := binlogstream.StartAtCurrent(ctx, src)
	require.NoError(t, err)
	srv.Exec(t, "INSERT INTO app.t VALUES (2), (3)")
	ids, err := streamToCurrent(t, src, start)
	require.NoError(t, err)
	assert.Equal(t, []any{int32(2), int32(3)}, ids, "only what was written after StartAtCurrent")
	st, err := src.Probe(ctx)
	require.NoError(t, err)
	assert.Equal(t, mysql.MariaDBFlavor, st.Flavor)

	// The first call on a fresh source may be the dump itself.
	ids, err = streamToCurrent(t, sourceNoFlavor(t, srv, ""), start)
	require.NoError(t, err)
	assert.Equal(t, []any{int32(2), int32(3)}, ids)

	// Negative control: an explicit, wrong Flavor is kept, and fails as
	// it did before detection existed.
	_, err = streamToCurrent(t, sourceNoFlavor(t, srv, mysql.MySQLFlavor), start)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "super_read_only")
}

// StartAtCurrentGTID starts after the server's executed set, in the
// flavor the server reports.
func TestStartAtCurrentGTID(t *testing.T) {
	srv := mariadb.Start(t, mariadb.Options{})
	srv.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)")
	src := sourceNoFlavor(t, srv, "")
	start, err := binlogstream.StartAtCurrentGTID(context.Background(), src)
	require.NoError(t, err)
	assert.Equal(t, mysql.MariaDBFlavor, start.Flavor)
	assert.Equal(t, srv.GTIDBinlogPos(t), start.Executed)
	srv.Exec(t, "INSERT INTO app.t VALUES (2)", "INSERT INTO app.t VALUES (3)")
	ids, err := streamToCurrent(t, src, start)
	require.NoError(t, err)
	assert.Equal(t, []any{int32(2), int32(3)}, ids)

	// A source that does not report its flavor is refused with the way out.
	_, err = binlogstream.StartAtCurrentGTID(context.Background(), binlogstream.ProberFunc(func(context.Context) (binlogstream.ServerState, error) {
		return binlogstream.ServerState{Binlog: binlogstream.Position{File: "f.000001", Offset: 4}}, nil
	}))
	assert.ErrorContains(t, err, "use StartAtGTID")
}
