package binlogstream_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

func rowFormatSource(t *testing.T, s *mariadb.Server, want func(schema, table string) bool) binlogstream.Source {
	t.Helper()
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: s.ReplUser(), Password: s.ReplPassword(), Host: s.Host(), Port: uint16(s.Port())},
		ServerID: 1001, Flavor: mysql.MariaDBFlavor, HeartbeatPeriod: 100 * time.Millisecond,
		DecodeTable: want,
	})
	require.NoError(t, err)
	return src
}

// TestIntegrationBinlogSettingsRefused: a server that logs STATEMENT or
// MIXED is refused before the dump, and one with binlog_row_image
// MINIMAL when whole rows are needed; the error says the variable, its
// value and what to set.
func TestIntegrationBinlogSettingsRefused(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)")
	start := binlogstream.StartAt(masterPos(t, s))
	cases := []struct {
		set, variable, value string
		cfg                  binlogstream.Config
	}{
		{"SET GLOBAL binlog_format=STATEMENT", "binlog_format", "STATEMENT", binlogstream.Config{}},
		{"SET GLOBAL binlog_format=MIXED", "binlog_format", "MIXED", binlogstream.Config{}},
		{"SET GLOBAL binlog_row_image=MINIMAL", "binlog_row_image", "MINIMAL", binlogstream.Config{RequireFullRowImage: true}},
		{"SET GLOBAL binlog_row_image=NOBLOB", "binlog_row_image", "NOBLOB", binlogstream.Config{Snapshot: &binlogstream.SnapshotConfig{Tables: mustPatterns(t, "app.t")}}},
	}
	for _, c := range cases {
		t.Run(c.value, func(t *testing.T) {
			s.Exec(t, c.set)
			defer s.Exec(t, "SET GLOBAL binlog_format=ROW", "SET GLOBAL binlog_row_image=FULL")
			r := itStream(t, rowFormatSource(t, s, nil), start, binlogstream.Position{}, c.cfg, nil)
			var be *binlogstream.BinlogSettingsError
			require.ErrorAs(t, r.err, &be)
			assert.Equal(t, c.variable, be.Variable)
			assert.Equal(t, c.value, be.Value)
			assert.Contains(t, r.err.Error(), c.variable+"="+c.value)
			assert.Contains(t, r.err.Error(), "SET GLOBAL "+c.variable+"="+be.Want)
			assert.Empty(t, r.events)
		})
	}
}

// TestIntegrationSessionStatementStopsTheStream: on a ROW server, a
// session that logs STATEMENT changes a selected table; the stream
// stops before that statement and a resume from the last token stops
// there again, after the rows before it were delivered once. A
// statement on an unselected table passes, and LOAD DATA (logged as an
// Execute_load_query event) stops the stream like any other.
func TestIntegrationSessionStatementStopsTheStream(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE app", "CREATE DATABASE percona",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v INT)", "CREATE TABLE percona.checksums (id INT PRIMARY KEY, c INT)")
	start := binlogstream.StartAt(masterPos(t, s))
	s.Exec(t, "INSERT INTO app.t VALUES (1, 1), (2, 2)")
	// The checksum tool's way: statement DML on its own table.
	s.Exec(t, "SET SESSION binlog_format=STATEMENT", "INSERT INTO percona.checksums SELECT 1, COUNT(*) FROM app.t")
	s.Exec(t, "INSERT INTO app.t VALUES (3, 3)")
	s.Exec(t, "SET SESSION binlog_format=STATEMENT", "UPDATE app.t SET v = v + 10 WHERE id = 1")
	s.Exec(t, "INSERT INTO app.t VALUES (4, 4)")
	end := masterPos(t, s)

	onlyApp := func(schema, _ string) bool { return schema == "app" }
	r := itStream(t, rowFormatSource(t, s, onlyApp), start, end, binlogstream.Config{}, nil)
	var se *binlogstream.StatementDMLError
	require.ErrorAs(t, r.err, &se)
	assert.Equal(t, []string{"`app`.`t`"}, se.Tables)
	assert.Contains(t, se.Statement, "UPDATE app.t SET v = v + 10")
	var rows []string
	for _, e := range r.entries {
		if strings.HasPrefix(e, "Write") {
			rows = append(rows, e)
		}
	}
	assert.Len(t, rows, 3, "the rows before the statement, once: %v", rows)
	last := r.events[len(r.events)-1].Resume
	assert.True(t, last.Streamed.Compare(se.Start) <= 0)

	again := itStream(t, rowFormatSource(t, s, onlyApp), reparse(t, last), end, binlogstream.Config{}, nil)
	var se2 *binlogstream.StatementDMLError
	require.ErrorAs(t, again.err, &se2)
	assert.Equal(t, se.Start, se2.Start)
	for _, e := range again.entries {
		assert.False(t, strings.HasPrefix(e, "Write"), "nothing delivered twice or past the hole: %s", e)
	}

	// The negative control: with the override the stream passes the
	// statement as a Query event and reaches the end.
	all := itStream(t, rowFormatSource(t, s, onlyApp), start, end, binlogstream.Config{AllowStatementDML: true}, nil)
	require.NoError(t, all.err)
	assert.Contains(t, strings.Join(all.entries, "\n"), "UPDATE app.t SET v = v + 10")

	// LOAD DATA logged as a statement.
	file := filepath.Join(t.TempDir(), "rows.txt")
	require.NoError(t, os.WriteFile(file, []byte("7\t7\n8\t8\n"), 0o644))
	require.NoError(t, os.Chmod(filepath.Dir(file), 0o755))
	from := masterPos(t, s)
	s.Exec(t, "SET SESSION binlog_format=STATEMENT", "LOAD DATA INFILE '"+file+"' INTO TABLE app.t")
	ld := itStream(t, rowFormatSource(t, s, onlyApp), binlogstream.StartAt(from), masterPos(t, s), binlogstream.Config{}, nil)
	require.ErrorAs(t, ld.err, &se)
	assert.Equal(t, []string{"`app`.`t`"}, se.Tables)
	assert.Contains(t, se.Statement, "LOAD DATA")
}

// TestIntegrationMixedWithRowLoggedChanges: under MIXED the server logs
// unsafe statements as rows. The server is refused at start; with
// AllowStatementDML the run streams those rows.
func TestIntegrationMixedWithRowLoggedChanges(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, u VARCHAR(64))", "SET GLOBAL binlog_format=MIXED")
	start := binlogstream.StartAt(masterPos(t, s))
	s.Exec(t, "INSERT INTO app.t VALUES (1, UUID())", "UPDATE app.t SET u = UUID() WHERE id = 1") // unsafe: logged as rows
	end := masterPos(t, s)

	r := itStream(t, rowFormatSource(t, s, nil), start, end, binlogstream.Config{}, nil)
	var be *binlogstream.BinlogSettingsError
	require.ErrorAs(t, r.err, &be)
	assert.Equal(t, "MIXED", be.Value)

	ok := itStream(t, rowFormatSource(t, s, nil), start, end, binlogstream.Config{AllowStatementDML: true}, nil)
	require.NoError(t, ok.err)
	var kinds []replication.EventType
	for _, ev := range ok.events {
		if _, isRows := ev.Event.(*replication.RowsEvent); isRows {
			kinds = append(kinds, ev.Header.EventType)
		}
	}
	assert.Len(t, kinds, 2, "the insert and the update, as rows")
}

func mustPatterns(t *testing.T, list string) binlogstream.TablePatterns {
	t.Helper()
	p, err := binlogstream.ParseTablePatterns(list)
	require.NoError(t, err)
	return p
}
