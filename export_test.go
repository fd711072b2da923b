package binlogstream

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/chunkread"
	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/binlogstream/binlogstream/internal/snapshot"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream/internal/rows"
)

// Test seams: the pure tracker, for tests that feed it events directly.

type Tracker = tracker

func NewTracker(from ResumePosition) *Tracker { return newTracker(from) }

// Observe returns the tracker's decision as plain values: action is
// "ignore", "drop" or "deliver".
func (t *tracker) Observe(ev *replication.BinlogEvent) (action string, start, end Position, after ResumePosition, err error) {
	var d decision
	err = t.observe(ev, &d)
	if err != nil {
		return "", Position{}, Position{}, ResumePosition{}, err
	}
	return [...]string{"ignore", "drop", "deliver"}[d.action], d.start, d.end, d.after, nil
}

// NewGTIDTracker returns a GTID-mode tracker starting after executed.
func NewGTIDTracker(flavor, executed string) (*gtidTracker, error) {
	return newGTIDTracker(ResumePosition{Flavor: flavor, Executed: executed})
}

// Observe is tracker.Observe for the GTID-mode tracker.
func (t *gtidTracker) Observe(ev *replication.BinlogEvent) (action string, start, end Position, after ResumePosition, err error) {
	var d decision
	err = t.observe(ev, &d)
	if err != nil {
		return "", Position{}, Position{}, ResumePosition{}, err
	}
	return [...]string{"ignore", "drop", "deliver"}[d.action], d.start, d.end, d.after, nil
}

// DisableSchema turns schema tracking off, for benchmarks that measure
// what it costs.
func DisableSchema(s *BinlogStreamer) { s.schemaOff = true }

// DDLBetween is ddlBetween, for the schema snapshot's tests.
var DDLBetween = ddlBetween

// Rowless returns src opening its dumps as the DDL scan does (no table's
// rows decoded), or nil when src cannot.
func Rowless(src Source) Source {
	ro, ok := src.(rowlessOpener)
	if !ok {
		return nil
	}
	return rowlessSource{ro}
}

// ArenaOf identifies the memory an Event's rows were decoded into when
// its source recycles it (0 when it does not).
func ArenaOf(ev Event) uintptr { return uintptr(unsafe.Pointer(ev.arena)) }

// ReleaseTwice releases a fresh arena through two copies of one Event and
// through a copy kept from before its reuse, and returns the generations
// it went through (one release each, not three).
func ReleaseTwice() (before, after uint64) {
	a := rows.NewArena()
	before = a.Gen()
	e1 := Event{arena: a, arenaGen: before}
	e2 := e1
	e1.Release()
	e2.Release()
	e1.Release()
	return before, a.Gen()
}

// PrescanListed is the DDL scan from `from` to snap with the statements
// listed by the server (SHOW BINLOG EVENTS, page events a query), with no
// fallback; PrescanStreamed the same read from a dump.
func PrescanListed(ctx context.Context, src *SyncerSource, from ResumePosition, snap *SchemaSnapshot, page int) (*SchemaPrescan, error) {
	src.listPage = page
	p := newPrescan(from, snap)
	if err := src.listStatements(ctx, from, snap.Position, p.note); err != nil {
		return nil, err
	}
	return p.SchemaPrescan, nil
}

func PrescanStreamed(ctx context.Context, src *SyncerSource, from ResumePosition, snap *SchemaSnapshot) (*SchemaPrescan, error) {
	return streamedPrescan(ctx, src, from, snap, logrus.New())
}

// ListedEvent is a SHOW BINLOG EVENTS row as eachBinlogEvent reads it.
type ListedEvent struct {
	Pos, End   uint64
	Type, Info string
}

// ListEvents reads the events from `from` to `to` with eachBinlogEvent,
// page events a query, stopping after stopAfter (0: none), then runs
// `SELECT 1` on the same connection (it must still be usable).
func ListEvents(ctx context.Context, src *SyncerSource, from, to Position, page, stopAfter int) ([]ListedEvent, error) {
	conn, done, err := src.queryConn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	var out []ListedEvent
	err = eachBinlogEvent(conn, from, to, page, func(e *listedEvent) bool {
		out = append(out, ListedEvent{e.pos, e.end, string(e.typ), string(e.info)})
		return stopAfter == 0 || len(out) < stopAfter
	})
	if err != nil {
		return out, err
	}
	if _, err := conn.Execute("SELECT 1"); err != nil {
		return out, fmt.Errorf("the connection after the list: %w", err)
	}
	return out, nil
}

// CollationName is charset.Names: a collation id's charset
// and collation names.
func CollationName(flavor string, id uint64) (cs, coll string) { return charset.Names(flavor, id) }

// SchemaHistoryForTest is the schema history alone, for tests that check
// it against a server's information_schema statement by statement.
type SchemaHistoryForTest struct{ h *schema.History }

func NewSchemaHistoryForTest(serverCharset string) *SchemaHistoryForTest {
	h := schema.NewHistory()
	h.ServerCharset = serverCharset
	return &SchemaHistoryForTest{h}
}

// Apply applies one DDL statement run with default database db.
func (x *SchemaHistoryForTest) Apply(db, sql string) error {
	_, err := x.h.Apply(db, sql)
	return historyError(err)
}

// Diff says how the history's tables of database db differ from the
// snapshot's (taken right after the statements applied), and which
// tables the history holds as unknown. A charset or collation the
// history leaves empty (not known to it) is not a difference; MariaDB's
// JSON is a LONGTEXT to information_schema.
func (x *SchemaHistoryForTest) Diff(s *SchemaSnapshot, db string) (diffs, unknown []string) {
	seen := map[string]bool{}
	for _, st := range s.Tables {
		if st.Schema != db {
			continue
		}
		seen[st.Name] = true
		k := ddl.Key{Schema: st.Schema, Name: st.Name}
		want, got := histTableOf(st), x.h.Tables[k]
		if got == nil {
			if why, ok := x.h.Unknown[k]; ok {
				unknown = append(unknown, st.Name+": "+why)
			} else {
				diffs = append(diffs, st.Name+": not in the history")
			}
			continue
		}
		if len(got.Columns()) != len(want.Columns()) {
			diffs = append(diffs, fmt.Sprintf("%s: %d columns in the history, %d on the server", st.Name, len(got.Columns()), len(want.Columns())))
			continue
		}
		for i, w := range want.Columns() {
			g := got.Columns()[i]
			gt := g.Type
			if g.DataType == "json" && w.DataType == "longtext" {
				gt = w.Type
			}
			if g.Name != w.Name || gt != w.Type || g.Charset != "" && g.Charset != w.Charset ||
				g.Collation != "" && g.Collation != w.Collation {
				diffs = append(diffs, fmt.Sprintf("%s column %d: history %s %s %s %s, server %s %s %s %s", st.Name, i+1,
					g.Name, g.Type, g.Charset, g.Collation, w.Name, w.Type, w.Charset, w.Collation))
			}
		}
		if fmt.Sprint(got.RowPK()) != fmt.Sprint(want.RowPK()) {
			diffs = append(diffs, fmt.Sprintf("%s: primary key %v in the history, %v on the server", st.Name, got.RowPK(), want.RowPK()))
		}
		if got.HashKeys() != want.HashKeys() {
			diffs = append(diffs, fmt.Sprintf("%s: %d long unique keys in the history, %d on the server", st.Name, got.HashKeys(), want.HashKeys()))
		}
		if got.Versioned() != want.Versioned() {
			diffs = append(diffs, fmt.Sprintf("%s: implicit system versioning %v in the history, %v on the server", st.Name, got.Versioned(), want.Versioned()))
		}
	}
	for k := range x.h.Tables {
		if k.Schema == db && !seen[k.Name] {
			diffs = append(diffs, k.Name+": in the history, not on the server")
		}
	}
	return diffs, unknown
}

// ApplyListed applies a Query event as SHOW BINLOG EVENTS lists it (its
// default database in a "use `db`; " prefix) when it is DDL.
// A failed statement (errorCode not 0) is applied as logged with that
// error.
func (x *SchemaHistoryForTest) ApplyListed(info string, errorCode uint16) error {
	db, query := parseQueryInfo(info)
	if !ddl.IsDDL([]byte(query)) {
		return nil
	}
	_, err := applyRecord(x.h, &SchemaRecord{Database: db, Statement: query, ErrorCode: errorCode})
	return err
}

// FilteredSource is a Source whose selected tables are want, as
// SyncerConfig.DecodeTable makes them (its rows are not filtered).
type FilteredSource struct {
	Source
	Want func(schema, table string) bool
}

func (f FilteredSource) decodeFilter() func(schema, table string) bool { return f.Want }

// KeepSecretsInHistory makes the schema history store statements as the
// binlog has them (on) or masked (off), the store's unmasked control.
func KeepSecretsInHistory(on bool) { keepSecrets = on }

// SetProgressClock replaces the clock behind Config.ProgressInterval, so a
// test decides when a Progress is due.
func SetProgressClock(s *BinlogStreamer, now func() time.Time) { s.progress.now = now }

// WithSnapshotSample returns r carrying a snapshot state: two tables, one
// with a composite boundary key, one still to read.
func WithSnapshotSample(r ResumePosition) ResumePosition {
	st := snapshot.New(snapStateCfg)
	st.Add("app.a")
	st.Add("app.b")
	st.Start("app.a", snapshot.Pos{}, true)
	st.Delivered("app.a", snapshot.Key{Raw: []any{[]byte("k\x00é"), int64(-3), uint64(1 << 63)}})
	r.snap = string(st.Append(nil))
	return r
}

// WithSnapshotRows returns r carrying the snapshot state after each of
// keys (one key column) was delivered in table app.a; with others, tables
// app.b and app.c, still to read, follow its key in the state.
func WithSnapshotRows(r ResumePosition, keys []any, others bool) []ResumePosition {
	st := snapshot.New(snapStateCfg)
	st.Add("app.a")
	if others {
		st.Add("app.b")
		st.Add("app.c")
	}
	st.Start("app.a", snapshot.Pos{}, true)
	out := make([]ResumePosition, len(keys))
	for i, k := range keys {
		st.Delivered("app.a", snapshot.Key{Raw: []any{k}})
		out[i] = r
		out[i].snap = string(st.Append(nil))
	}
	return out
}

// SnapshotRunning reports whether s holds a snapshot component. Call it
// on Run's goroutine (from a listener).
func SnapshotRunning(s *BinlogStreamer) bool { return s.snap != nil }

// SnapshotNoFold makes chunks be taken as read at the stream's point,
// with no held-back change folded in: the negative control of the
// snapshot tests.
func SnapshotNoFold(on bool) { snapNoFold = on }

// SnapshotReadAges calls f with the transaction lifetime of every chunk
// read taken in (on the Run goroutine) until the returned func is called.
func SnapshotReadAges(f func(time.Duration)) (undo func()) {
	snapReadAge = f
	return func() { snapReadAge = nil }
}

// SnapshotAttachAnywhere lets chunks attach after any event, inside source
// transactions too, until the returned func is called: the negative
// control of TestSnapshotReadsBetweenTransactions.
func SnapshotAttachAnywhere() (undo func()) {
	snapAnywhere = true
	return func() { snapAnywhere = false }
}

// SnapshotWatermarks makes every flavor read chunks with watermarks, as
// on MySQL: the tests run the algorithm against MariaDB.
func SnapshotWatermarks(on bool) { snapWatermarks = on }

// SnapshotWatermarkNaive makes watermark reads naive, for the negative
// controls: "low-after" takes the low watermark after the SELECT,
// "no-locking" reads with a consistent read instead of a locking one,
// "" is the real algorithm.
func SnapshotWatermarkNaive(mode string) {
	switch mode {
	case "low-after":
		snapWatermarkNaive = chunkread.NaiveLowAfter
	case "no-locking":
		snapWatermarkNaive = chunkread.NaiveNoLocking
	default:
		snapWatermarkNaive = chunkread.NaiveNone
	}
}

// SnapshotInflight calls f with a table's reads in flight each time one
// is asked.
func SnapshotInflight(f func(table string, n int)) (undo func()) {
	snapInflight = f
	return func() { snapInflight = nil }
}

func init() {
	// BINLOGSTREAM_TEST_SNAPSHOT_READERS=N runs every snapshot with at
	// least N readers.
	snapMinReaders, _ = strconv.Atoi(os.Getenv(SnapshotReadersEnv))
}

// SnapshotChainFault makes every every-th chained chunk read start from a
// bound the server lost (chunkread.SetChainFault), calling hit for each;
// noCheck takes the reads as they come (the negative control).
func SnapshotChainFault(every int, noCheck bool, hit func()) (undo func()) {
	snapChainFault = &snapFault{every, noCheck, hit}
	return func() { snapChainFault = nil }
}

// SnapshotAheadReads bounds the reads one reader sends ahead.
const SnapshotAheadReads = aheadReads

// SnapshotReadersEnv names the variable that sets the tests' least
// SnapshotConfig.Readers.
const SnapshotReadersEnv = "BINLOGSTREAM_TEST_SNAPSHOT_READERS"
