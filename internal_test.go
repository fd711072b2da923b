package binlogstream

// Tests of unexported parts: the executed-set bookkeeping and the token
// checksum.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/google/uuid"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

// TestExecutedSetFastPath: the tracker checks and extends its executed set
// from the GTID event's fields, without parsing text. Over random GTID
// sequences (several sources or domains, in order, with gaps, repeated,
// out of order) it must agree at every step with go-mysql's parse-and-
// Update on the text, as the set's String (what tokens hold) shows.
func TestExecutedSetFastPath(t *testing.T) {
	sids := []uuid.UUID{uuid.MustParse("3e11fa47-71ca-11e1-9e33-c80aa9429562"), uuid.MustParse("0b3e2d4c-0000-4000-8000-00000000000a")}
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		for _, flavor := range []string{mysql.MySQLFlavor, mysql.MariaDBFlavor} {
			start := ""
			if r.IntN(2) == 0 { // sometimes resume from a non-empty set
				if flavor == mysql.MySQLFlavor {
					start = sids[0].String() + ":1-5:8"
				} else {
					start = "0-1-5"
				}
			}
			tr, err := newGTIDTracker(ResumePosition{Flavor: flavor, Executed: start})
			require.NoError(t, err)
			ref, err := mysql.ParseGTIDSet(flavor, start)
			require.NoError(t, err)
			next := map[int]int64{}
			for step := 0; step < 60; step++ {
				src := r.IntN(2)
				switch r.IntN(5) {
				case 0: // a gap
					next[src] += int64(1 + r.IntN(3))
				case 1: // repeat or go back (MySQL: a set; MariaDB keeps one
					// position per domain and warns on such input)
					if flavor == mysql.MySQLFlavor {
						next[src] = max(next[src]-int64(r.IntN(3)), 0)
					}
				}
				next[src]++
				var g string
				if flavor == mysql.MySQLFlavor {
					g = fmt.Sprintf("%s:%d", sids[src], next[src])
					tr.cur = parsedGTID{kind: gtidMySQL, str: g, sid: sids[src], gno: next[src]}
				} else {
					m := mysql.MariadbGTID{DomainID: uint32(src), ServerID: uint32(1 + r.IntN(2)), SequenceNumber: uint64(next[src])}
					g = m.String()
					tr.cur = parsedGTID{kind: gtidMariaDB, str: g, maria: m}
				}
				one, err := mysql.ParseGTIDSet(flavor, g)
				require.NoError(t, err)
				in, err := tr.contains(g)
				require.NoError(t, err)
				require.Equal(t, ref.Contain(one), in, "seed %d step %d: contains %s in %s", seed, step, g, ref)
				require.NoError(t, tr.addExecuted(g))
				require.NoError(t, ref.Update(g))
				require.Equal(t, ref.String(), tr.executed.String(), "seed %d step %d: after %s", seed, step, g)
			}
		}
	}
}

// TestCRCMatchesStdlib: the token checksum is crc32.ChecksumIEEE, for
// every length (the 8-byte steps and the tail).
func TestCRCMatchesStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 300; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		require.Equal(t, crc32.ChecksumIEEE(b), crcIEEE(b), "length %d", n)
	}
}

// TestTaggedGTIDText: MySQL 8.4 tagged GTIDs read "uuid:tag:gno", the text
// go-mysql's GTID sets parse and print the same way; no tag gives the
// plain "uuid:gno", and an anonymous one (gno 0) nothing.
func TestTaggedGTIDText(t *testing.T) {
	sid := uuid.MustParse("3e11fa47-71ca-11e1-9e33-c80aa9429562")
	ev := func(tag string, gno int64) *replication.GtidTaggedLogEvent {
		return &replication.GtidTaggedLogEvent{GTIDEvent: replication.GTIDEvent{SID: sid[:], GNO: gno, Tag: mysql.NewTag(tag)}}
	}
	g := mysqlTaggedGTIDString(ev("alpha", 5))
	require.Equal(t, sid.String()+":alpha:5", g)
	set, err := mysql.ParseGTIDSet(mysql.MySQLFlavor, g)
	require.NoError(t, err)
	require.Equal(t, g, set.String())
	require.Equal(t, sid.String()+":5", mysqlTaggedGTIDString(ev("", 5)))
	require.Equal(t, "", mysqlTaggedGTIDString(ev("alpha", 0)))
}

// TestDefaultReconnectBudget: the default bound and backoff wait about a
// minute in all, as DefaultReconnectAttempts documents.
func TestDefaultReconnectBudget(t *testing.T) {
	c := Config{Source: nopSource{}, Start: StartAt(Position{File: "f.000001", Offset: 4})}
	require.NoError(t, c.validate())
	require.Equal(t, DefaultReconnectAttempts, c.MaxReconnectAttempts)
	var total time.Duration
	for i := range c.MaxReconnectAttempts {
		total += backoff(c.ReconnectBackoff, c.MaxReconnectBackoff, i)
	}
	require.Equal(t, 56300*time.Millisecond, total)
}

type nopSource struct{ Source }

// TestGoMySQLExpectedWarningsAtDebug: the warnings go-mysql writes on every
// reconnect the source makes go to Debug; its other warnings stay Warn.
func TestGoMySQLExpectedWarningsAtDebug(t *testing.T) {
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	l := slog.New(&logrusHandler{log: log})
	unknown := mysql.NewError(mysql.ER_NO_SUCH_THREAD, "Unknown thread id: 42")
	denied := mysql.NewError(mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, "Access denied; you need the CONNECTION ADMIN privilege")
	cases := []struct {
		log  func()
		want logrus.Level
	}{
		{func() { l.Warn("retry sync is disabled") }, logrus.DebugLevel},
		{func() { l.Error("kill connection", slog.Any("error", unknown), slog.Int64("id", 42)) }, logrus.DebugLevel},
		{func() { l.Error("kill connection", slog.Any("error", denied), slog.Int64("id", 42)) }, logrus.WarnLevel},
		{func() { l.Error("connection was bad") }, logrus.WarnLevel},
		{func() { l.Info("begin to sync binlog from position") }, logrus.DebugLevel},
	}
	for i, c := range cases {
		hook.Reset()
		c.log()
		require.Len(t, hook.AllEntries(), 1)
		require.Equal(t, c.want, hook.LastEntry().Level, "case %d: %s", i, hook.LastEntry().Message)
	}
}

// TestRowsFingerprint: a row change folds into the GTID-mode fingerprint
// as FNV-1a 64 of the previous value (8 bytes, little endian), its kind
// and "schema.table" ("" without a Table_map): tokens persist it, so it
// must not change; and it costs no allocation.
func TestRowsFingerprint(t *testing.T) {
	want := func(fp uint64, kind byte, key string, n int) uint64 {
		for range n {
			h := fnv.New64a()
			h.Write(binary.LittleEndian.AppendUint64(nil, fp))
			h.Write([]byte{kind})
			h.Write([]byte(key))
			fp = h.Sum64()
		}
		return fp
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		tp          replication.EventType
		kind        byte
		table       *replication.TableMapEvent
		key         string
		description string
	}{
		{replication.WRITE_ROWS_EVENTv1, 'i', &replication.TableMapEvent{Schema: []byte("app"), Table: []byte("orders")}, "app.orders", "insert"},
		{replication.UPDATE_ROWS_EVENTv2, 'u', &replication.TableMapEvent{Schema: []byte("s"), Table: []byte("")}, "s.", "update"},
		{replication.DELETE_ROWS_EVENTv2, 'd', &replication.TableMapEvent{Schema: []byte(""), Table: []byte("t")}, ".t", "delete"},
		{replication.WRITE_ROWS_EVENTv2, 'i', nil, "", "no Table_map"},
	} {
		ev := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: c.tp}, Event: &replication.RowsEvent{Table: c.table}}
		for _, n := range []int{0, 1, 2, 7} {
			fp := rng.Uint64()
			require.Equal(t, want(fp, c.kind, c.key, n), addRows(fp, ev, n), "%s, %d rows", c.description, n)
		}
		require.Zero(t, testing.AllocsPerRun(100, func() { addRows(1, ev, 3) }), c.description)
	}
	// Pinned: tokens persist the fingerprint, so the value of a known
	// input must stay the same.
	ev := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.WRITE_ROWS_EVENTv1},
		Event: &replication.RowsEvent{Table: &replication.TableMapEvent{Schema: []byte("app"), Table: []byte("orders")}}}
	require.Equal(t, uint64(0xc3a372bca7b4092c), addRows(fnvOffset64, ev, 3))
}

// TestListedColumns: SHOW BINLOG EVENTS columns as eachBinlogEvent reads
// them from go-mysql's reused row: positions as numbers or text, and a
// NULL text column as nil, not the bytes an earlier row left in the
// reused FieldValue.
func TestListedColumns(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"4", 4, true}, {"18446744073709551", 18446744073709551, true},
		{"9999999999999999999", 9999999999999999999, true}, {"10000000000000000000", 0, false},
		{"", 0, false}, {"-1", 0, false}, {"12a", 0, false}, {" 1", 0, false},
	} {
		got, ok := parseDecimal([]byte(c.in))
		require.Equal(t, c.ok, ok, c.in)
		if ok {
			require.Equal(t, c.want, got, c.in)
		}
	}

	fields := []*mysql.Field{
		{Type: mysql.MYSQL_TYPE_LONGLONG, Flag: mysql.UNSIGNED_FLAG},
		{Type: mysql.MYSQL_TYPE_LONGLONG},
		{Type: mysql.MYSQL_TYPE_VAR_STRING},
	}
	var row []mysql.FieldValue
	row, err := mysql.RowData("\x0218\x0212\x03abc").ParseText(fields, row)
	require.NoError(t, err)
	for _, i := range []int{0, 1} {
		v, ok := fieldUint(&row[i])
		require.True(t, ok)
		require.Equal(t, uint64(18-6*i), v)
	}
	require.Equal(t, "abc", string(fieldText(&row[2])))
	row, err = mysql.RowData("\x0218\x02-1\xfb").ParseText(fields, row)
	require.NoError(t, err)
	_, ok := fieldUint(&row[1])
	require.False(t, ok, "a negative position")
	require.Equal(t, "abc", string(row[2].AsString()), "go-mysql keeps the earlier row's bytes under a NULL")
	require.Nil(t, fieldText(&row[2]))
	_, ok = fieldUint(&row[2])
	require.False(t, ok, "NULL")
	row, err = mysql.RowData("\x0218\x0212\x0277").ParseText(fields, row)
	require.NoError(t, err)
	v, ok := fieldUint(&row[2])
	require.True(t, ok)
	require.Equal(t, uint64(77), v, "a position given as text")
}

// TestRowKinds: every one of the 256 event types has the kind the
// replication protocol gives it (MariaDB's compressed rows events and
// MySQL's partial JSON updates included, the v0 types too), and the row
// counts, the fingerprint's byte and the rows-event test agree with it.
func TestRowKinds(t *testing.T) {
	want := map[replication.EventType]string{
		replication.WRITE_ROWS_EVENTv0: "insert", replication.WRITE_ROWS_EVENTv1: "insert",
		replication.WRITE_ROWS_EVENTv2: "insert", replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1: "insert",
		replication.UPDATE_ROWS_EVENTv0: "update", replication.UPDATE_ROWS_EVENTv1: "update",
		replication.UPDATE_ROWS_EVENTv2: "update", replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1: "update",
		replication.PARTIAL_UPDATE_ROWS_EVENT: "update",
		replication.DELETE_ROWS_EVENTv0:       "delete", replication.DELETE_ROWS_EVENTv1: "delete",
		replication.DELETE_ROWS_EVENTv2: "delete", replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1: "delete",
	}
	rows := make([][]any, 6)
	for i := range 256 {
		et := replication.EventType(i)
		kind := want[et]
		require.Equal(t, kind, RowKind(et), "%s", et)
		require.Equal(t, kind != "", isRowsEvent(et), "%s", et)
		ev := &replication.BinlogEvent{Header: &replication.EventHeader{EventType: et}, Event: &replication.RowsEvent{Rows: rows}}
		switch kind {
		case "":
			require.Zero(t, RowChanges(ev), "%s", et)
		case "update":
			require.Equal(t, 2, rowsPerChange(et), "%s", et)
			require.Equal(t, 3, RowChanges(ev), "%s", et)
			require.Equal(t, byte('u'), rowKind(et), "%s", et)
		default:
			require.Equal(t, 1, rowsPerChange(et), "%s", et)
			require.Equal(t, 6, RowChanges(ev), "%s", et)
			require.Equal(t, kind[0], rowKind(et), "%s", et)
		}
	}
	require.Zero(t, RowChanges(&replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.WRITE_ROWS_EVENTv2},
		Event: &replication.QueryEvent{}}))
}
