package binlogstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream/internal/chunkread"
	"github.com/binlogstream/binlogstream/internal/snapshot"
	"github.com/binlogstream/binlogstream/internal/verify"
)

// VerifyConfig is what VerifyTable needs.
type VerifyConfig struct {
	// Source is the server the copy was made from. VerifyTable reads
	// the table's definition and its chunks there, each in one short
	// consistent-snapshot transaction placed at a binlog position
	// (MariaDB's Binlog_snapshot_file and _position).
	Source *SyncerSource
	// Table is "schema.table". It needs a primary key or a UNIQUE key of
	// NOT NULL columns, as a snapshot does.
	Table string
	// ChunkRows is the number of source rows per chunk (default 1000).
	ChunkRows int
	// ReadTarget reads r's rows from the target, in r's key order and
	// in the form the source's are read (VerifyTarget.Read gives both),
	// and returns them with the source binlog position the target had
	// applied exactly up to when it read them. It should read once the
	// target has applied exactly up to r.At: only then do the two sides
	// compare, and every difference found is real. Any other position
	// makes the chunk be read again on both sides, compared or reported
	// never. A caller whose target is quiesced at the source's position
	// (nothing written on either side) may return r.At.
	ReadTarget func(ctx context.Context, r VerifyRange) (rows [][]any, at Position, err error)
	// Rereads bounds the reads again of one chunk whose target read is
	// not at the source read's position (default 10). A chunk still misaligned after
	// them is returned in VerifyResult.Unsettled, not as differences.
	Rereads int

	// Hold, when set, is called before each source chunk read, and the
	// release it returns once that chunk is compared (and repaired). A
	// caller whose target applies the stream stops its applier at its
	// next transaction boundary there: the source's read then lands at
	// or after what the target has applied, and ReadTarget lets the
	// applier go on up to exactly r.At and reads there. Without Hold, a
	// target that applies faster than the chunk is read may already be
	// past r.At, and the chunk is read again.
	Hold func(ctx context.Context) (release func(), err error)
	// OnChunk, when set, is called for each chunk compared at one
	// position, with its source rows' count and its differences (before
	// Repair), so that a caller can report them as they are found. An
	// error stops VerifyTable.
	OnChunk func(r VerifyRange, rows int, diffs []VerifyDifference) error
	// Repair, when set, is called with a chunk's differences while the
	// target is still at the chunk's position (between ReadTarget and
	// Hold's release). It rewrites those rows on the target from each
	// difference's Row (DiffExtra: deletes the key). The chunk is then
	// read from the target and compared again: the differences gone are
	// marked Repaired, those left are returned as they are.
	Repair func(ctx context.Context, r VerifyRange, diffs []VerifyDifference) error
}

// VerifyRange is one chunk's key range: the rows whose key is after
// After (nil: from the first) and at most Through (nil: to the last),
// with the binlog position the source's rows were read at.
type VerifyRange struct {
	Table          string
	After, Through []any
	At             Position
	t              *chunkread.Table
}

// DiffKind is what a difference is: "missing" (on the target), "extra"
// (on the target) or "changed".
type DiffKind string

const (
	DiffMissing DiffKind = "missing"
	DiffExtra   DiffKind = "extra"
	DiffChanged DiffKind = "changed"
)

// VerifyDifference is one row that differs, found at one position.
type VerifyDifference struct {
	Table string
	// KeyColumns name Key's values: the row's key (the source row's, or
	// the target row's for DiffExtra), as Table.Value gives them.
	KeyColumns []string
	Key        []any
	Kind       DiffKind
	// Columns, for DiffChanged, are exactly the columns whose stored
	// values differ (bytes, not collation: case and trailing spaces
	// count, as do a float's last bit and a microsecond).
	Columns []string
	// At is the binlog position both rows were read at.
	At Position
	// Row is the source's row (nil for DiffExtra), each column as
	// Table.Value gives it, in the table's column order: what a repair
	// writes.
	Row []any
	// Repaired says Repair rewrote the row and a read again found it
	// equal.
	Repaired bool
}

// VerifyResult is what VerifyTable found.
type VerifyResult struct {
	Table string
	// Chunks and Rows count the chunks compared and the source rows in
	// them (their last reads).
	Chunks int
	Rows   int64
	// Differences are in key order.
	Differences []VerifyDifference
	// Rereads counts chunk reads again because the target's rows were
	// not read at the source's position.
	Rereads int
	// Repaired counts the Differences marked Repaired.
	Repaired int
	// Unsettled are the ranges never read at one position on both
	// sides within Rereads: neither proven equal nor different.
	Unsettled []VerifyRange
	// LongestRead is the longest transaction of the source reads.
	LongestRead time.Duration
}

func (c *VerifyConfig) validate() error {
	if c.Source == nil {
		return errors.New("binlogstream: verify: VerifyConfig.Source is nil")
	}
	if c.ReadTarget == nil {
		return errors.New("binlogstream: verify: VerifyConfig.ReadTarget is nil: give the function that reads a key range from the target")
	}
	if c.ChunkRows == 0 {
		c.ChunkRows = 1000
	}
	if c.ChunkRows < 0 {
		return fmt.Errorf("binlogstream: verify: ChunkRows %d: give a positive number", c.ChunkRows)
	}
	if c.Rereads == 0 {
		c.Rereads = 10
	}
	return nil
}

// VerifyTable proves a copy of one table: it reads the table's key
// chunks from the source, each at a binlog position, has ReadTarget read
// the same key range from the target at that position, and compares the
// two byte for byte (a checksum, then row by row where it differs).
// Equal rows at one position on both sides are what a right copy holds;
// each difference is reported as missing, extra or changed. Chunks tile
// the whole key space, so rows the target holds before the first source
// key, between two, or after the last are found too. No transaction
// lives longer than one chunk read; nothing is locked.
func VerifyTable(ctx context.Context, cfg VerifyConfig) (*VerifyResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tables, missing, keyless, err := cfg.Source.snapshotTables(ctx, nil, []string{cfg.Table})
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 || len(keyless) > 0 || len(tables) != 1 {
		return nil, fmt.Errorf("binlogstream: verify %s: the source has no such base table with a primary key or a UNIQUE key of NOT NULL columns", cfg.Table)
	}
	t := tables[0]
	conn, done, err := cfg.Source.queryConn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if cfg.Source.flavor() != mysql.MariaDBFlavor { // known once queryConn has connected
		return nil, fmt.Errorf("binlogstream: verify %s: the source is not MariaDB: chunks placed at one position need its consistent snapshot's", cfg.Table)
	}
	rd, err := chunkread.New(conn, chunkread.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("binlogstream: verify %s: %w", cfg.Table, err)
	}
	v := &verifier{cfg: cfg, t: t, sc: &syncerChunks{rd: rd}, res: &VerifyResult{Table: t.id}}
	next := func(after []any) (*chunkRead, error) {
		return v.read(chunkread.Range{After: after, Limit: cfg.ChunkRows})
	}
	if cfg.Hold == nil {
		// Nothing to hold: the source's chunks are read ahead on this
		// connection while the target reads and the comparisons go on,
		// and this goroutine's own source queries (a target's key
		// weights, a chunk read again) go to a second one.
		conn2, done2, err := cfg.Source.queryConn(ctx)
		if err != nil {
			return nil, err
		}
		defer done2()
		rd2, err := chunkread.New(conn2, chunkread.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("binlogstream: verify %s: %w", cfg.Table, err)
		}
		v.sc = &syncerChunks{rd: rd2}
		var stop func()
		next, stop = v.readAhead(ctx, &syncerChunks{rd: rd})
		defer stop()
	}
	v.vt = &verify.Table{Name: t.id, Key: t.key, Compare: snapshot.CompareValues}
	for _, c := range t.rt.Columns {
		v.vt.Columns = append(v.vt.Columns, c.Name)
	}
	for _, i := range t.key {
		v.keyCols = append(v.keyCols, t.rt.Columns[i].Name)
	}
	defer v.release()
	var after []any
	for {
		if err := ctx.Err(); err != nil {
			return v.res, err
		}
		if err := v.hold(ctx); err != nil {
			return v.res, err
		}
		c, err := next(after)
		if err != nil {
			return v.res, err
		}
		var through []any
		if len(c.rows) == cfg.ChunkRows {
			through = c.keyed[len(c.keyed)-1].Key.Raw
		}
		if err := v.chunk(ctx, VerifyRange{Table: t.id, After: after, Through: through, At: c.at, t: t.rt}, c); err != nil {
			return v.res, err
		}
		v.release()
		if through == nil {
			return v.res, nil
		}
		after = through
	}
}

type verifier struct {
	cfg     VerifyConfig
	t       *snapTable
	sc      *syncerChunks
	vt      *verify.Table
	keyCols []string
	res     *VerifyResult
	held    func() // Hold's release while held
}

// hold holds the target (Config.Hold) unless it is held already.
func (v *verifier) hold(ctx context.Context) error {
	if v.cfg.Hold == nil || v.held != nil {
		return nil
	}
	release, err := v.cfg.Hold(ctx)
	if err != nil {
		return fmt.Errorf("binlogstream: verify %s: hold the target: %w", v.t.id, err)
	}
	v.held = release
	return nil
}

// release lets the target go on, if it is held.
func (v *verifier) release() {
	if v.held != nil {
		v.held()
		v.held = nil
	}
}

// readAhead reads the table's source chunks in order on sc, on a
// goroutine of its own, one chunk ahead of the comparisons: next
// returns the chunk after the key after, which is the last key of the
// chunk next returned before (nil: the first chunk). stop ends the
// reads once the one under way is over.
func (v *verifier) readAhead(ctx context.Context, sc *syncerChunks) (next func(after []any) (*chunkRead, error), stop func()) {
	type read struct {
		c   *chunkRead
		err error
	}
	reads := make(chan read, 1)
	quit, finished := make(chan struct{}), make(chan struct{})
	n := v.cfg.ChunkRows
	go func() {
		defer close(finished)
		var after []any
		for {
			c, err := sc.readRange(v.t, chunkread.Range{After: after, Limit: n})
			select {
			case reads <- read{c, err}:
			case <-quit:
				return
			}
			if err != nil || len(c.rows) < n {
				return
			}
			after = c.keyed[len(c.keyed)-1].Key.Raw
		}
	}()
	next = func([]any) (*chunkRead, error) {
		select {
		case r := <-reads:
			if r.err != nil {
				return nil, r.err
			}
			v.res.LongestRead = max(v.res.LongestRead, r.c.age)
			return r.c, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return next, func() {
		close(quit)
		<-finished
	}
}

// read reads a source chunk with its keys.
func (v *verifier) read(rg chunkread.Range) (*chunkRead, error) {
	c, err := v.sc.readRange(v.t, rg)
	if err != nil {
		return nil, err
	}
	v.res.LongestRead = max(v.res.LongestRead, c.age)
	return c, nil
}

// chunk compares one range, reading it again on both sides while the
// target's read is not at the source's position, and repairs what
// differs when asked to.
func (v *verifier) chunk(ctx context.Context, rg VerifyRange, src *chunkRead) error {
	for attempt := 0; ; attempt++ {
		dst, at, err := v.target(ctx, rg)
		if err != nil {
			return err
		}
		if at == rg.At {
			if v.cfg.Repair == nil {
				v.release() // the rows are read: the target may go on
			}
			diffs, err := v.compare(rg, src, dst)
			if err != nil {
				return err
			}
			v.res.Chunks++
			v.res.Rows += int64(len(src.rows))
			if v.cfg.OnChunk != nil {
				if err := v.cfg.OnChunk(rg, len(src.rows), diffs); err != nil {
					return err
				}
			}
			if len(diffs) > 0 && v.cfg.Repair != nil {
				if diffs, err = v.repair(ctx, rg, src, diffs); err != nil {
					return err
				}
			}
			v.res.Differences = append(v.res.Differences, diffs...)
			return nil
		}
		// The two reads saw different points of the stream: a row may
		// have changed in between, and an equal pair proves nothing
		// either (the target may have lost a change that came back).
		// Read both again.
		if attempt == v.cfg.Rereads {
			v.res.Unsettled = append(v.res.Unsettled, rg)
			return nil
		}
		v.res.Rereads++
		v.release()
		if err := v.hold(ctx); err != nil {
			return err
		}
		if src, err = v.read(chunkread.Range{After: rg.After, Through: rg.Through}); err != nil {
			return err
		}
		rg.At = src.at
	}
}

// target reads rg from the target with its keys.
func (v *verifier) target(ctx context.Context, rg VerifyRange) (*chunkRead, Position, error) {
	rows, at, err := v.cfg.ReadTarget(ctx, rg)
	if err != nil {
		return nil, at, fmt.Errorf("binlogstream: verify %s: read the target at %s: %w", v.t.id, rg.At, err)
	}
	return &chunkRead{rows: rows}, at, nil
}

// compare compares a pair read at rg.At: their checksums, then, when
// they differ, the rows in key order (the target's keys made only then:
// a text key's weights are a source query).
func (v *verifier) compare(rg VerifyRange, src, dst *chunkRead) ([]VerifyDifference, error) {
	if verify.Checksum(src.rows) == verify.Checksum(dst.rows) {
		return nil, nil
	}
	if dst.keyed == nil {
		if err := v.sc.keys(v.t, dst); err != nil {
			return nil, fmt.Errorf("binlogstream: verify %s: the target's rows: %w", v.t.id, err)
		}
	}
	diffs, err := verify.RowDiffs(v.vt, side(src), side(dst))
	if err != nil {
		return nil, fmt.Errorf("binlogstream: %w", err)
	}
	out := make([]VerifyDifference, 0, len(diffs))
	for _, d := range diffs {
		key := make([]any, len(d.Key))
		for j, raw := range d.Key {
			key[j] = v.t.table.Value(v.t.key[j], raw)
		}
		var row []any
		if d.Src >= 0 {
			raw := src.rows[d.Src]
			row = make([]any, len(raw))
			for j, x := range raw {
				row[j] = v.t.table.Value(j, x)
			}
		}
		out = append(out, VerifyDifference{
			Table: d.Table, KeyColumns: v.keyCols, Key: key, Kind: DiffKind(d.Kind.String()), Columns: d.Columns, At: rg.At, Row: row,
		})
	}
	return out, nil
}

// repair has Config.Repair rewrite diffs, then reads rg from the target
// again (still at rg.At) and marks the differences gone Repaired.
func (v *verifier) repair(ctx context.Context, rg VerifyRange, src *chunkRead, diffs []VerifyDifference) ([]VerifyDifference, error) {
	if err := v.cfg.Repair(ctx, rg, diffs); err != nil {
		return nil, fmt.Errorf("binlogstream: verify %s: repair at %s: %w", v.t.id, rg.At, err)
	}
	dst, at, err := v.target(ctx, rg)
	if err != nil {
		return nil, err
	}
	if at != rg.At {
		return nil, fmt.Errorf("binlogstream: verify %s: the target moved from %s to %s while held for a repair", v.t.id, rg.At, at)
	}
	left, err := v.compare(rg, src, dst)
	if err != nil {
		return nil, err
	}
	still := map[string]bool{}
	for _, d := range left {
		still[fmt.Sprint(d.Kind, d.Key)] = true
	}
	for i := range diffs {
		if !still[fmt.Sprint(diffs[i].Kind, diffs[i].Key)] {
			diffs[i].Repaired = true
			v.res.Repaired++
		}
	}
	return diffs, nil
}

func side(c *chunkRead) verify.Side {
	s := verify.Side{Rows: c.rows, Keys: make([][]any, len(c.keyed))}
	for i := range c.keyed {
		s.Keys[i] = c.keyed[i].Key.Cmp
	}
	return s
}

// VerifyTarget reads key ranges from a copy's target, in the form the
// source's are read, for a VerifyConfig.ReadTarget.
type VerifyTarget struct {
	rd *chunkread.Reader
}

// NewVerifyTarget sets conn's session up for reads (the results'
// character set and time zone) and owns it while it reads.
func NewVerifyTarget(conn *client.Conn) (*VerifyTarget, error) {
	rd, err := chunkread.New(conn, chunkread.Plain)
	if err != nil {
		return nil, fmt.Errorf("binlogstream: verify: target: %w", err)
	}
	return &VerifyTarget{rd: rd}, nil
}

// Read reads r's rows from the target's table of the same name, in key
// order, in one consistent-snapshot transaction.
func (vt *VerifyTarget) Read(r VerifyRange) ([][]any, error) {
	if r.t == nil {
		return nil, errors.New("binlogstream: verify: target read of a VerifyRange not made by VerifyTable")
	}
	c, err := vt.rd.Read(r.t, chunkread.Range{After: r.After, Through: r.Through})
	if err != nil {
		return nil, fmt.Errorf("binlogstream: verify %s: target: %w", r.Table, err)
	}
	for _, row := range c.Rows {
		for j := len(r.t.Columns); j < len(row); j++ {
			row[j] = r.t.Fill
		}
	}
	return c.Rows, nil
}
