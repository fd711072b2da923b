package binlogstream

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/replication"
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

// RowsDecoderForTest is the sources' rows decoder, decoding in place:
// Decode is its go-mysql RowsEventDecodeFunc, Fast counts the events this
// package's decoder decoded (the others went to go-mysql's).
type RowsDecoderForTest struct{ d *rowsDecoder }

func NewRowsDecoderForTest() RowsDecoderForTest {
	return RowsDecoderForTest{newRowsDecoder(0, nil, nil)}
}

func (d RowsDecoderForTest) Decode(re *replication.RowsEvent, data []byte) error {
	return d.d.decode(re, data)
}
func (d RowsDecoderForTest) Fast() int { return int(d.d.fastEvents.Load()) }

// FastRowsSettings reports whether the fast decoder applies to re's
// parser settings.
func FastRowsSettings(re *replication.RowsEvent) bool {
	_, ok := fastSettings(re)
	return ok
}

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
	a := newArena()
	before = a.gen.Load()
	e1 := Event{arena: a, arenaGen: before}
	e2 := e1
	e1.Release()
	e2.Release()
	e1.Release()
	return before, a.gen.Load()
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

// CollationName is collationName for a flavor: a collation id's charset
// and collation names.
func CollationName(flavor string, id uint64) (cs, coll string) { return collationNameFor(flavor, id) }
