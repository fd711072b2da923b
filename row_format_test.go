package binlogstream_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// statementBinlog is a ROW binlog with one row change logged as a
// statement in its middle, as a session with binlog_format=STATEMENT
// writes it, and the statement's text.
func statementBinlog(f th.Flavor, stmt string) *th.Binlog {
	return th.NewBuilder(f, th.MaxRowsPerEvent(2)).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 3)...) }).
		Txn(func(t *th.Txn) {
			t.Insert(orders, orderRows(1, 1)...)
			t.Statement("app", stmt)
			t.Insert(orders, orderRows(2, 1)...)
		}).
		Txn(func(t *th.Txn) { t.Insert(orders, orderRows(3, 2)...) }).Build()
}

// runAll streams bl's source from start to bl's end (StopAt) and
// returns the entries delivered, the last token and Run's error.
func runAll(t *testing.T, bl *th.Binlog, cfg binlogstream.Config) ([]string, binlogstream.ResumePosition, error) {
	t.Helper()
	cfg.ReconnectBackoff, cfg.MaxReconnectBackoff = time.Microsecond, time.Millisecond
	s, err := binlogstream.NewBinlogStreamer(cfg)
	require.NoError(t, err)
	defer s.Close()
	end := bl.Events[len(bl.Events)-1]
	s.StopAt(binlogstream.Position{File: end.File, Offset: uint64(end.End)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	var last binlogstream.ResumePosition
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		got = append(got, entries(ev)...)
		last = ev.Resume
		return nil
	})
	return got, last, s.Run(ctx)
}

func TestStatementDMLStopsBeforeTheStatement(t *testing.T) {
	for _, f := range []th.Flavor{th.MySQL, th.MariaDB} {
		t.Run(string(f), func(t *testing.T) {
			stmt := "UPDATE users SET name = 'x' WHERE id = 1"
			bl := statementBinlog(f, stmt)
			start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})

			got, last, err := runAll(t, bl, binlogstream.Config{Source: th.NewFakeSource(bl), Start: start})
			var se *binlogstream.StatementDMLError
			require.ErrorAs(t, err, &se)
			assert.ErrorIs(t, err, binlogstream.ErrRowsNotLogged)
			assert.Equal(t, []string{"`app`.`users`"}, se.Tables)
			assert.Equal(t, stmt, se.Statement)
			assert.Contains(t, err.Error(), "binlog_format=ROW")
			assert.Contains(t, err.Error(), "--tables")
			for _, e := range got {
				assert.NotContains(t, e, "UPDATE", "the statement is not delivered")
			}
			require.NotEmpty(t, got, "what came before it is delivered")
			assert.True(t, last.Streamed.Compare(se.Start) <= 0, "the last token %s is before the statement at %s", last.Streamed, se.Start)

			// A restart from the last token stops at the same statement,
			// delivering nothing twice and nothing after it.
			again, _, err := runAll(t, bl, binlogstream.Config{Source: th.NewFakeSource(bl), Start: roundTrip(t, last)})
			var se2 *binlogstream.StatementDMLError
			require.ErrorAs(t, err, &se2)
			assert.Equal(t, se.Start, se2.Start)
			assert.Empty(t, again)

			// The negative control: with the override the statement is
			// delivered as a Query event and the stream goes on.
			all, _, err := runAll(t, bl, binlogstream.Config{Source: th.NewFakeSource(bl), Start: start, AllowStatementDML: true})
			require.NoError(t, err)
			assert.Greater(t, len(all), len(got)+1)
			assert.Contains(t, strings.Join(all, "\n"), stmt)
		})
	}
}

func TestStatementDMLOnUnselectedTablesPasses(t *testing.T) {
	onlyOrders := func(schema, table string) bool { return schema == "app" && table == "orders" }
	cases := []struct {
		stmt   string
		refuse bool
		tables []string
	}{
		{"UPDATE users SET name = 'x'", false, nil},
		{"INSERT INTO percona.checksums SELECT * FROM app.orders", false, nil},
		{"DELETE u FROM users u JOIN orders o ON o.user_id = u.id", false, nil},
		{"UPDATE orders SET note = 'x'", true, []string{"`app`.`orders`"}},
		{"UPDATE users u JOIN orders o ON o.user_id = u.id SET note = 'x'", true, []string{"`app`.`orders`"}},
		{"REPLACE INTO app.orders VALUES (9, 1, 'x')", true, []string{"`app`.`orders`"}},
		{"UPDATE users SET name = 'x' RETURNING (", true, nil}, // cannot be read: any table
	}
	for _, c := range cases {
		t.Run(c.stmt, func(t *testing.T) {
			bl := statementBinlog(th.MariaDB, c.stmt)
			src := binlogstream.FilteredSource{Source: th.NewFakeSource(bl), Want: onlyOrders}
			start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
			_, _, err := runAll(t, bl, binlogstream.Config{Source: src, Start: start})
			if !c.refuse {
				require.NoError(t, err)
				return
			}
			var se *binlogstream.StatementDMLError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, c.tables, se.Tables)
		})
	}
}

func TestStatementDMLErrorIsShort(t *testing.T) {
	// The statement is shown cut to 200 bytes, its secrets masked as
	// the JSON lines mask them.
	bl := statementBinlog(th.MariaDB, "UPDATE users SET name = 'x' WHERE id = 1 /* "+strings.Repeat("y", 300)+" */")
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	_, _, err := runAll(t, bl, binlogstream.Config{Source: th.NewFakeSource(bl), Start: start})
	var se *binlogstream.StatementDMLError
	require.ErrorAs(t, err, &se)
	assert.LessOrEqual(t, len(se.Statement), 203)
	assert.True(t, strings.HasSuffix(se.Statement, "..."))
}

// settingsSource is a Source whose server reports settings.
type settingsSource struct {
	binlogstream.Source
	settings func() binlogstream.BinlogSettings
	asked    atomic.Int32
}

func (s *settingsSource) BinlogSettings(context.Context) (binlogstream.BinlogSettings, error) {
	s.asked.Add(1)
	return s.settings(), nil
}

func TestBinlogSettingsRefusedBeforeTheDump(t *testing.T) {
	bl := th.NewBuilder(th.MariaDB).Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 3)...) }).Build()
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	cases := []struct {
		format, image     string
		allow, full       bool
		variable, message string
	}{
		{"STATEMENT", "FULL", false, false, "binlog_format", "binlog_format=STATEMENT"},
		{"MIXED", "FULL", false, false, "binlog_format", "binlog_format=MIXED"},
		{"ROW", "MINIMAL", false, true, "binlog_row_image", "binlog_row_image=MINIMAL"},
		{"ROW", "NOBLOB", false, true, "binlog_row_image", "binlog_row_image=NOBLOB"},
		{"MIXED", "MINIMAL", true, true, "binlog_row_image", "binlog_row_image=MINIMAL"},
		{"ROW", "MINIMAL", false, false, "", ""},
		{"MIXED", "FULL", true, false, "", ""},
		{"ROW", "FULL", false, true, "", ""},
	}
	for _, c := range cases {
		src := &settingsSource{Source: th.NewFakeSource(bl), settings: func() binlogstream.BinlogSettings {
			return binlogstream.BinlogSettings{Server: "db1:3306", Format: c.format, RowImage: c.image}
		}}
		got, _, err := runAll(t, bl, binlogstream.Config{Source: src, Start: start, AllowStatementDML: c.allow, RequireFullRowImage: c.full})
		if c.variable == "" {
			require.NoError(t, err, "%+v", c)
			assert.NotEmpty(t, got)
			continue
		}
		var be *binlogstream.BinlogSettingsError
		require.ErrorAs(t, err, &be, "%+v", c)
		assert.Equal(t, c.variable, be.Variable)
		assert.ErrorIs(t, err, binlogstream.ErrRowsNotLogged)
		assert.Contains(t, err.Error(), "db1:3306 has "+c.message)
		assert.Contains(t, err.Error(), "SET GLOBAL "+be.Variable+"="+be.Want)
		assert.Empty(t, got, "nothing is delivered from a refused server")
		assert.EqualValues(t, 1, src.asked.Load(), "refused at once, not retried")
	}
}

func TestBinlogSettingsCheckedAtEveryReconnect(t *testing.T) {
	bl := th.NewBuilder(th.MySQL, th.MaxRowsPerEvent(1)).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 3)...) }).
		Txn(func(t *th.Txn) { t.Insert(users, userRows(4, 3)...) }).Build()
	start := binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})
	fake := th.NewFakeSource(bl)
	fake.FailStream(0, 8) // the first dump drops after 8 events
	var format atomic.Value
	format.Store("ROW")
	src := &settingsSource{Source: fake, settings: func() binlogstream.BinlogSettings {
		return binlogstream.BinlogSettings{Server: "db1:3306", Format: format.Load().(string), RowImage: "FULL"}
	}}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: start,
		ReconnectBackoff: time.Microsecond, MaxReconnectBackoff: time.Millisecond})
	require.NoError(t, err)
	defer s.Close()
	rows := 0
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			rows++
			if rows == 1 {
				format.Store("MIXED") // the server changes while we stream
			}
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = s.Run(ctx)
	var be *binlogstream.BinlogSettingsError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "MIXED", be.Value)
	assert.True(t, rows >= 1 && rows < 6, "rows %d", rows)
	assert.EqualValues(t, 2, src.asked.Load())
}

// TestFailoverRefusesStatementLoggingCandidate: a candidate that passes
// every other check but logs MIXED is refused like a read-only one, and
// never streamed from.
func TestFailoverRefusesStatementLoggingCandidate(t *testing.T) {
	f := th.MariaDB
	primaryLog := gtidWorkload(f, 2)
	primary := th.NewFakeSource(primaryLog)
	primary.FailStream(0, 9)
	writer := binlogstream.ServerState{Flavor: "mariadb", LogBin: true, LogSlaveUpdates: true, Executed: finalExecuted(primary)}
	mixed := &settingsSource{Source: th.NewFakeSource(primaryLog), settings: func() binlogstream.BinlogSettings {
		return binlogstream.BinlogSettings{Server: "replica:3306", Format: "MIXED", RowImage: "FULL"}
	}}
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source: &deadAfterFirst{FakeSource: primary}, Start: gtidStart(t, f),
		ReconnectBackoff: time.Microsecond,
		Failover: &binlogstream.FailoverConfig{Attempts: 2, Wait: time.Millisecond, Resolver: binlogstream.StaticResolver(
			binlogstream.Candidate{Name: "mixed-replica", Source: mixed, Prober: staticState(writer)})},
	})
	require.NoError(t, err)
	err = s.Run(context.Background())
	require.ErrorIs(t, err, binlogstream.ErrCandidateRefused)
	require.ErrorIs(t, err, binlogstream.ErrRowsNotLogged)
	assert.Contains(t, err.Error(), "mixed-replica")
	assert.Contains(t, err.Error(), "replica:3306 has binlog_format=MIXED")
	assert.Empty(t, mixed.Source.(*th.FakeSource).Opens(), "a refused candidate is never streamed from")
}

type noLister struct{}

func (noLister) BinaryLogs(context.Context) ([]string, error) { return nil, nil }
func (noLister) PurgedGTIDs(context.Context) (string, error)  { return "", nil }

// TestCheckBinlogSettingsOfAnArchive: an archive's check is its live
// server's; binlog files alone have no server and pass.
func TestCheckBinlogSettingsOfAnArchive(t *testing.T) {
	bl := th.NewBuilder(th.MariaDB).Txn(func(t *th.Txn) { t.Insert(users, userRows(1, 1)...) }).Build()
	live := &settingsSource{Source: th.NewFakeSource(bl), settings: func() binlogstream.BinlogSettings {
		return binlogstream.BinlogSettings{Server: "live:3306", Format: "STATEMENT", RowImage: "FULL"}
	}}
	dir := t.TempDir()
	require.NoError(t, bl.WriteDir(dir))
	files, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir})
	require.NoError(t, err)
	arch, err := binlogstream.NewArchiveSource(binlogstream.ArchiveConfig{Archive: files, Live: live, Lister: noLister{}})
	require.NoError(t, err)
	err = binlogstream.CheckBinlogSettings(context.Background(), binlogstream.Config{Source: arch})
	assert.ErrorContains(t, err, "live:3306 has binlog_format=STATEMENT")
	assert.NoError(t, binlogstream.CheckBinlogSettings(context.Background(), binlogstream.Config{Source: files}))
	assert.NoError(t, binlogstream.CheckBinlogSettings(context.Background(), binlogstream.Config{Source: arch, AllowStatementDML: true}))
}
