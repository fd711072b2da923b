package binlogstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/binlogstream/binlogstream/internal/chunkread"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/binlogstream/binlogstream/internal/snapshot"
)

// snapshotSource is what a snapshot needs of the server besides the
// stream: the tables' definitions, chunk reads, and the order of text
// keys. SyncerSource implements it; tests can fake it.
type snapshotSource interface {
	// snapshotTables reads the definitions of the base tables pats
	// selects, and of the named ones ("schema.table"), by name; missing
	// lists the named ones the server has no base table for, keyless
	// those it has with no key to read them by (in order).
	snapshotTables(ctx context.Context, pats TablePatterns, names []string) (tables []*snapTable, missing, keyless []string, err error)
	// chunkReader opens a connection that reads chunks.
	chunkReader(ctx context.Context) (chunkReader, error)
}

// chunkReader reads chunks on one connection, one at a time.
type chunkReader interface {
	// readChunk reads up to n rows of t after the key after (nil: from
	// the first) and at most through (nil: to the last) in one short
	// transaction, and the binlog position the read is placed at (with a
	// low watermark on MySQL).
	readChunk(t *snapTable, after, through []any, n int) (*chunkRead, error)
	// keyAfter is the key of t's row offset places after the key after
	// (nil: from the first; 0: the first row after it), with Cmp set, or
	// nil when there is no such row. It reads the key's index outside
	// any transaction: where a range of about offset+1 rows ends.
	keyAfter(t *snapTable, after []any, offset int) (*snapshot.Key, error)
	// keyCmp fills in the comparable form of keys of t from their Raw
	// values (asking the server for the weights of text keys).
	keyCmp(t *snapTable, keys []*snapshot.Key) error
	// canSend reports whether reads of t can be sent ahead: written
	// before the answers of the reads sent before them are received.
	canSend(t *snapTable) bool
	// send writes the read of up to n rows of t after the key after, or,
	// chained, after the last key of the read sent just before it, which
	// is of t; receive takes in the oldest read sent, as readChunk reads
	// it. A chained read that did not start after the last key of the
	// read before it fails with chunkread.ErrChainBroken.
	send(t *snapTable, after []any, n int, chained bool) error
	receive(t *snapTable) (*chunkRead, error)
	close()
}

// chunkRead is one chunk as read: rows in key order, in the form a rows
// event's Rows hold them (RowValues reads them through Table.Value).
type chunkRead struct {
	at Position
	// low, for a watermark read (snapshot_watermark.go): the binlog
	// position taken before the read; at is the one taken after it.
	low  *Position
	rows [][]any
	// keyed are the rows with their keys, as a chunk holds them (Data
	// points to the row in rows).
	keyed []snapshot.Row
	// age is how long the read's transaction lived.
	age time.Duration
}

// snapTable is a table under snapshot: its definition and its key.
type snapTable struct {
	id    string // "schema.table", the key of the snapshot state
	table *Table
	// rt is how its chunks are read. Its rows end with a value Absent
	// for each of MariaDB's long unique key hashes at the end of
	// table.Columns: in the row image, not selectable.
	rt    *chunkread.Table
	key   []int               // indexes in table.Columns of the key's columns, in order
	kinds []chunkread.KeyKind // how each key column compares
	// rawCmp: every key column compares by its raw value (localCmp
	// returns Int and Bytes values unchanged), so a key's Cmp and Raw
	// can be one slice.
	rawCmp bool
}

var errNoSnapshotKey = errors.New("has no primary key and no UNIQUE key of NOT NULL columns: it cannot be read in key order")

// newSnapTable chooses the key of a table read from information_schema.
func newSnapTable(st SnapshotTable) (*snapTable, error) {
	id := st.Schema + "." + st.Name
	if st.SystemVersioned {
		return nil, fmt.Errorf("binlogstream: snapshot of %s: system-versioned tables are not supported", quoteName(st.Schema, st.Name))
	}
	t := &snapTable{id: id, table: &Table{Schema: st.Schema, Name: st.Name, Columns: st.Columns, Source: SchemaFromHistory}}
	cols, index := st.PrimaryKey, "PRIMARY"
	if len(cols) == 0 {
	keys:
		for _, k := range st.UniqueKeys {
			for j, c := range k.Columns {
				i := schema.ColumnIndex(st.Columns, c)
				if i < 0 || st.Columns[i].Nullable || k.SubParts[j] != 0 {
					continue keys
				}
			}
			cols, index = k.Columns, k.Name
			break
		}
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("binlogstream: snapshot of %s: the table %w", quoteName(st.Schema, st.Name), errNoSnapshotKey)
	}
	rt, err := chunkread.NewTable(st.Schema, st.Name, slices.Clip(st.Columns), cols, index)
	if err != nil {
		return nil, fmt.Errorf("binlogstream: snapshot of %s: %w", quoteName(st.Schema, st.Name), err)
	}
	t.rt, t.key, t.kinds = rt, rt.Key, rt.Kinds
	t.rawCmp = !slices.ContainsFunc(t.kinds, func(k chunkread.KeyKind) bool { return k != chunkread.Int && k != chunkread.Bytes })
	if index == "PRIMARY" {
		t.table.PrimaryKey = slices.Clone(t.key)
	}
	// The row image ends with a hidden hash column per long unique key, as
	// the schema history's tables do.
	t.table.Columns = slices.Clip(st.Columns)
	for _, k := range st.UniqueKeys {
		if k.Hash {
			rt.Extra++
			t.table.Columns = append(t.table.Columns, schema.HashColumn(rt.Extra))
		}
	}
	rt.Fill = Absent
	return t, nil
}

// padSpace reports whether a collation ignores trailing spaces.
func padSpace(coll string) bool { return !strings.Contains(coll, "nopad") }

// keyRaw is the token form of a key value (Table.Value's): integers as
// int64/uint64, everything else as bytes.
func keyRaw(v any) any {
	switch x := v.(type) {
	case int64, uint64, nil:
		return x
	case string:
		return []byte(x)
	case []byte:
		return bytes.Clone(x)
	}
	return []byte(fmt.Sprint(v))
}

// localCmp is the comparable form of one key value (raw: keyRaw's),
// except for chunkread.Weight.
func localCmp(k chunkread.KeyKind, raw any) (any, error) {
	switch k {
	case chunkread.Int:
		switch raw.(type) {
		case int64, uint64:
			return raw, nil
		}
	case chunkread.Decimal:
		if b, ok := raw.([]byte); ok {
			return snapshot.Decimal(b), nil
		}
	case chunkread.Bytes:
		if b, ok := raw.([]byte); ok {
			return b, nil
		}
	case chunkread.BinText:
		if b, ok := raw.([]byte); ok {
			return bytes.TrimRight(b, " "), nil
		}
	case chunkread.Time:
		if b, ok := raw.([]byte); ok {
			return timeMicros(string(b))
		}
	}
	return nil, fmt.Errorf("key value %T does not fit its column", raw)
}

// timeMicros reads a TIME value "[-]HHH:MM:SS[.ffffff]" as microseconds.
func timeMicros(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	hms, frac, _ := strings.Cut(s, ".")
	p := strings.Split(hms, ":")
	if len(p) != 3 {
		return 0, fmt.Errorf("TIME value %q", s)
	}
	var v int64
	for _, x := range p {
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("TIME value %q", s)
		}
		v = v*60 + n
	}
	v *= 1e6
	if frac != "" {
		f, err := strconv.ParseInt((frac + "000000")[:6], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("TIME value %q", s)
		}
		v += f
	}
	if neg {
		v = -v
	}
	return v, nil
}

// keyOf is the key of a row (values as a rows event's Rows hold them),
// with Cmp set for every column but chunkread.Weight ones.
func (t *snapTable) keyOf(tbl *Table, row []any) (snapshot.Key, error) {
	return t.keyIn(tbl, row, make([]any, t.keyMem()))
}

// keyMem is the number of values keyIn keeps a key's Raw and Cmp in.
func (t *snapTable) keyMem() int {
	if t.rawCmp {
		return len(t.key)
	}
	return 2 * len(t.key)
}

// keyIn is keyOf with the key's Raw and Cmp in mem, keyMem values: with
// rawCmp, Cmp is Raw.
func (t *snapTable) keyIn(tbl *Table, row []any, mem []any) (snapshot.Key, error) {
	n := len(t.key)
	k := snapshot.Key{Raw: mem[:n:n], Cmp: mem[:n:n]}
	if !t.rawCmp {
		k.Cmp = mem[n : 2*n : 2*n]
	}
	for j, i := range t.key {
		if i >= len(row) {
			return k, fmt.Errorf("row of %s has no key column %d", t.id, i)
		}
		k.Raw[j] = keyRaw(tbl.Value(i, row[i]))
		if t.kinds[j] != chunkread.Weight {
			c, err := localCmp(t.kinds[j], k.Raw[j])
			if err != nil {
				return k, fmt.Errorf("%s key column %s: %w", t.id, t.table.Columns[i].Name, err)
			}
			if !t.rawCmp { // else c is k.Raw[j] already
				k.Cmp[j] = c
			}
		}
	}
	return k, nil
}

// needsServer reports whether t's keys need the server's weights.
func (t *snapTable) needsServer() bool { return slices.Contains(t.kinds, chunkread.Weight) }

var _ snapshotSource = (*SyncerSource)(nil)

func (s *SyncerSource) snapshotTables(ctx context.Context, pats TablePatterns, names []string) ([]*snapTable, []string, []string, error) {
	conn, done, err := s.queryConn(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer done()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var dbs []string
	if schemas, ok := pats.Schemas(); ok || len(pats) == 0 {
		dbs = schemas
		for _, n := range names {
			if db, _, ok := strings.Cut(n, "."); ok && !slices.Contains(dbs, db) {
				dbs = append(dbs, db)
			}
		}
	}
	snap, err := readSchema(conn, dbs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("binlogstream: snapshot: read the tables: %w", err)
	}
	var out []*snapTable
	var keyless []string
	for _, st := range snap.Tables {
		if !want[st.Schema+"."+st.Name] && !(len(pats) > 0 && pats.Match(st.Schema, st.Name)) {
			continue
		}
		t, err := newSnapTable(st)
		if errors.Is(err, errNoSnapshotKey) {
			keyless = append(keyless, st.Schema+"."+st.Name)
			delete(want, st.Schema+"."+st.Name)
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		out = append(out, t)
		delete(want, t.id)
	}
	missing := slices.Sorted(maps.Keys(want))
	slices.Sort(keyless)
	return out, missing, keyless, nil
}

func (s *SyncerSource) chunkReader(ctx context.Context) (chunkReader, error) {
	conn, done, err := s.queryConn(ctx)
	if err != nil {
		return nil, err
	}
	mode := chunkread.Snapshot
	if s.watermarkReads() {
		mode = chunkread.Watermark
	}
	rd, err := chunkread.New(conn, mode)
	if err != nil {
		done()
		return nil, fmt.Errorf("binlogstream: snapshot: %w", err)
	}
	rd.SetNaive(snapWatermarkNaive)
	if f := snapChainFault; f != nil {
		rd.SetChainFault(f.every, f.noCheck, f.hit)
	}
	return &syncerChunks{rd: rd, done: done}, nil
}

// syncerChunks reads chunks on a connection of a SyncerSource.
type syncerChunks struct {
	rd   *chunkread.Reader
	done func()
}

func (r *syncerChunks) close() { r.done() }

func (r *syncerChunks) readChunk(t *snapTable, after, through []any, n int) (*chunkRead, error) {
	return r.readRange(t, chunkread.Range{After: after, Through: through, Limit: n})
}

func (r *syncerChunks) keyAfter(t *snapTable, after []any, offset int) (*snapshot.Key, error) {
	vals, err := r.rd.KeyAfter(t.rt, after, offset)
	if err != nil {
		return nil, fmt.Errorf("binlogstream: snapshot of %s: %w", t.id, err)
	}
	if vals == nil {
		return nil, nil
	}
	row := make([]any, len(t.table.Columns))
	for j, i := range t.key {
		row[i] = vals[j]
	}
	k, err := t.keyOf(t.table, row)
	if err != nil {
		return nil, err
	}
	if err := r.keyCmp(t, []*snapshot.Key{&k}); err != nil {
		return nil, err
	}
	return &k, nil
}

func (r *syncerChunks) canSend(t *snapTable) bool { return r.rd.Ahead(t.rt) }

func (r *syncerChunks) send(t *snapTable, after []any, n int, chained bool) error {
	if err := r.rd.Send(t.rt, chunkread.Range{After: after, Limit: n}, chained); err != nil {
		return fmt.Errorf("binlogstream: snapshot of %s: %w", t.id, err)
	}
	return nil
}

func (r *syncerChunks) receive(t *snapTable) (*chunkRead, error) {
	c, err := r.rd.Receive()
	return r.chunkRead(t, c, err)
}

// readRange reads rg's rows of t as readChunk does.
func (r *syncerChunks) readRange(t *snapTable, rg chunkread.Range) (*chunkRead, error) {
	c, err := r.rd.Read(t.rt, rg)
	return r.chunkRead(t, c, err)
}

// chunkRead is the chunk c of t as read, with its keys.
func (r *syncerChunks) chunkRead(t *snapTable, c *chunkread.Chunk, err error) (*chunkRead, error) {
	if err != nil {
		return nil, fmt.Errorf("binlogstream: snapshot of %s: %w", t.id, err)
	}
	res := &chunkRead{at: Position{File: c.At.File, Offset: c.At.Offset}, rows: c.Rows, age: c.Age}
	if c.Low != nil {
		res.low = &Position{File: c.Low.File, Offset: c.Low.Offset}
	}
	if err := r.keys(t, res); err != nil {
		return nil, err
	}
	return res, nil
}

// keys makes the keys of a chunk's rows, after its transaction ended.
func (r *syncerChunks) keys(t *snapTable, res *chunkRead) error {
	res.keyed = make([]snapshot.Row, len(res.rows))
	// The keys' values in one allocation per chunk.
	w := t.keyMem()
	mem := make([]any, w*len(res.rows))
	for i, row := range res.rows {
		k, err := t.keyIn(t.table, row, mem[i*w:(i+1)*w])
		if err != nil {
			return err
		}
		res.keyed[i] = snapshot.Row{Key: k, Data: &res.rows[i]}
	}
	if !t.needsServer() {
		return nil // keyIn set every Cmp value
	}
	ptrs := make([]*snapshot.Key, len(res.keyed))
	for i := range res.keyed {
		ptrs[i] = &res.keyed[i].Key
	}
	return r.weights(t, ptrs)
}

// weightBatch bounds the WEIGHT_STRING expressions of one query.
const weightBatch = 512

func (r *syncerChunks) keyCmp(t *snapTable, keys []*snapshot.Key) error {
	for _, k := range keys {
		if len(k.Cmp) != len(k.Raw) {
			k.Cmp = make([]any, len(k.Raw))
		}
		for j, raw := range k.Raw {
			if t.kinds[j] == chunkread.Weight {
				continue
			}
			c, err := localCmp(t.kinds[j], raw)
			if err != nil {
				return fmt.Errorf("%s: %w", t.id, err)
			}
			k.Cmp[j] = c
		}
	}
	return r.weights(t, keys)
}

// weights sets the Cmp values of keys' chunkread.Weight columns to the
// server's weights of their raw values.
func (r *syncerChunks) weights(t *snapTable, keys []*snapshot.Key) error {
	if !t.needsServer() {
		return nil
	}
	type slot struct {
		k *snapshot.Key
		j int
	}
	var exprs []string
	var slots []slot
	flush := func() error {
		if len(exprs) == 0 {
			return nil
		}
		rs, err := r.rd.Conn().Execute("SELECT " + strings.Join(exprs, ", "))
		if err != nil {
			return fmt.Errorf("binlogstream: snapshot of %s: key weights: %w", t.id, err)
		}
		for i, s := range slots {
			s.k.Cmp[s.j] = bytes.Clone(rs.Values[0][i].AsString())
		}
		exprs, slots = exprs[:0], slots[:0]
		return nil
	}
	for _, k := range keys {
		for j, raw := range k.Raw {
			if t.kinds[j] != chunkread.Weight {
				continue
			}
			b, ok := raw.([]byte)
			if !ok {
				return fmt.Errorf("binlogstream: snapshot of %s: key value %T is not text", t.id, raw)
			}
			c := &t.table.Columns[t.key[j]]
			if padSpace(c.Collation) {
				b = bytes.TrimRight(b, " ")
			}
			lit, err := t.rt.Literal(j, b)
			if err != nil {
				return err
			}
			exprs, slots = append(exprs, "WEIGHT_STRING("+lit+")"), append(slots, slot{k, j})
			if len(exprs) == weightBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}
