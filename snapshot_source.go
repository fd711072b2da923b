package binlogstream

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream/internal/charset"
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
	// the first) in one short transaction, and the binlog position the
	// read is placed at (with a low watermark on MySQL).
	readChunk(t *snapTable, after []any, n int) (*chunkRead, error)
	// keyCmp fills in the comparable form of keys of t from their Raw
	// values (asking the server for the weights of text keys).
	keyCmp(t *snapTable, keys []*snapshot.Key) error
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
	keys []snapshot.Key
	// age is how long the read's transaction lived.
	age time.Duration
}

// snapTable is a table under snapshot: its definition and its key.
type snapTable struct {
	id    string // "schema.table", the key of the snapshot state
	table *Table
	key   []int    // indexes in table.Columns of the key's columns, in order
	kinds []keyCmp // how each key column compares
	index string   // the key's index name
	// query parts: the select list and the ORDER BY.
	selectList, orderBy string
	// hidden is how many of table.Columns, at the end, are MariaDB's long
	// unique key hashes: in the row image, not selectable, so a read row
	// has them Absent.
	hidden int
}

// keyCmp says how a key column's values compare in Go.
type keyCmp uint8

const (
	cmpInt     keyCmp = iota // int64/uint64
	cmpDecimal               // snapshot.Decimal
	cmpBytes                 // byte order: binary strings, fixed-format temporal text
	cmpTime                  // TIME: microseconds
	cmpBinText               // a UTF-8 _bin collation: byte order after trailing spaces go
	cmpWeight                // the server's WEIGHT_STRING
)

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
	var sel, order []string
	for _, c := range st.Columns {
		sel = append(sel, quoteIdent(c.Name))
	}
	for _, c := range cols {
		i := schema.ColumnIndex(st.Columns, c)
		if i < 0 {
			return nil, fmt.Errorf("binlogstream: snapshot of %s: key column %s not found", quoteName(st.Schema, st.Name), c)
		}
		k, err := keyCmpOf(&st.Columns[i])
		if err != nil {
			return nil, fmt.Errorf("binlogstream: snapshot of %s: key column %s: %w", quoteName(st.Schema, st.Name), c, err)
		}
		t.key, t.kinds = append(t.key, i), append(t.kinds, k)
		order = append(order, quoteIdent(c))
	}
	if index == "PRIMARY" {
		t.table.PrimaryKey = slices.Clone(t.key)
	}
	// The row image ends with a hidden hash column per long unique key, as
	// the schema history's tables do.
	t.table.Columns = slices.Clip(st.Columns)
	for _, k := range st.UniqueKeys {
		if k.Hash {
			t.hidden++
			t.table.Columns = append(t.table.Columns, schema.HashColumn(t.hidden))
		}
	}
	t.index, t.selectList, t.orderBy = index, strings.Join(sel, ", "), strings.Join(order, ", ")
	return t, nil
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func keyCmpOf(c *Column) (keyCmp, error) {
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year":
		return cmpInt, nil
	case "decimal":
		return cmpDecimal, nil
	case "date", "datetime", "timestamp":
		return cmpBytes, nil
	case "time":
		return cmpTime, nil
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return cmpBytes, nil
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext":
		if c.Charset == "binary" {
			return cmpBytes, nil
		}
		if charset.IsUTF8(c.Charset) || c.Charset == "ascii" {
			if strings.HasSuffix(c.Collation, "_bin") {
				return cmpBinText, nil
			}
		}
		if c.Collation == "" {
			return 0, errors.New("its collation is unknown")
		}
		return cmpWeight, nil
	}
	return 0, fmt.Errorf("type %s has no key order this package reproduces", c.DataType)
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
// except for cmpWeight.
func localCmp(k keyCmp, raw any) (any, error) {
	switch k {
	case cmpInt:
		switch raw.(type) {
		case int64, uint64:
			return raw, nil
		}
	case cmpDecimal:
		if b, ok := raw.([]byte); ok {
			return snapshot.Decimal(b), nil
		}
	case cmpBytes:
		if b, ok := raw.([]byte); ok {
			return b, nil
		}
	case cmpBinText:
		if b, ok := raw.([]byte); ok {
			return bytes.TrimRight(b, " "), nil
		}
	case cmpTime:
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
// with Cmp set for every column but cmpWeight ones.
func (t *snapTable) keyOf(tbl *Table, row []any) (snapshot.Key, error) {
	k := snapshot.Key{Raw: make([]any, len(t.key)), Cmp: make([]any, len(t.key))}
	for j, i := range t.key {
		if i >= len(row) {
			return k, fmt.Errorf("row of %s has no key column %d", t.id, i)
		}
		k.Raw[j] = keyRaw(tbl.Value(i, row[i]))
		if t.kinds[j] != cmpWeight {
			c, err := localCmp(t.kinds[j], k.Raw[j])
			if err != nil {
				return k, fmt.Errorf("%s key column %s: %w", t.id, t.table.Columns[i].Name, err)
			}
			k.Cmp[j] = c
		}
	}
	return k, nil
}

// needsServer reports whether t's keys need the server's weights.
func (t *snapTable) needsServer() bool { return slices.Contains(t.kinds, cmpWeight) }

// literal is a key value as SQL, in the column's type and collation.
func (t *snapTable) literal(j int, raw any) (string, error) {
	c := &t.table.Columns[t.key[j]]
	switch x := raw.(type) {
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case []byte:
		lit := "X'" + hex.EncodeToString(x) + "'"
		switch t.kinds[j] {
		case cmpBinText, cmpWeight:
			return "CONVERT(_utf8mb4 " + lit + " USING " + c.Charset + ") COLLATE " + c.Collation, nil
		case cmpBytes:
			if c.Charset == "binary" {
				return lit, nil
			}
			return "CAST(" + lit + " AS CHAR CHARACTER SET ascii)", nil
		case cmpDecimal:
			// A numeric literal with a point is an exact DECIMAL; a
			// string would compare as a double.
			if len(x) == 0 || strings.Trim(string(x), "-+0123456789.") != "" {
				return "", fmt.Errorf("DECIMAL key value %q of %s", x, t.id)
			}
			return string(x), nil
		case cmpTime:
			return "CAST(" + lit + " AS TIME(6))", nil
		}
	}
	return "", fmt.Errorf("key value %T of %s does not fit its column", raw, t.id)
}

// after is the WHERE condition "key > b" as the index orders it.
func (t *snapTable) after(b []any) (string, error) {
	if len(b) != len(t.key) {
		return "", fmt.Errorf("boundary of %s has %d values for a key of %d columns", t.id, len(b), len(t.key))
	}
	cond := ""
	for j := len(t.key) - 1; j >= 0; j-- {
		lit, err := t.literal(j, b[j])
		if err != nil {
			return "", err
		}
		col := quoteIdent(t.table.Columns[t.key[j]].Name)
		if cond == "" {
			cond = col + " > " + lit
		} else {
			cond = col + " > " + lit + " OR (" + col + " = " + lit + " AND (" + cond + "))"
		}
	}
	return cond, nil
}

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
	// Values as the binlog holds them: text in its column's charset,
	// TIMESTAMP in UTC (the source's TimestampStringLocation by default).
	if _, err := conn.Execute("SET SESSION character_set_results = binary, SESSION time_zone = '+00:00'"); err != nil {
		done()
		return nil, fmt.Errorf("binlogstream: snapshot: set up the reader's session: %w", err)
	}
	r := &syncerChunks{conn: conn, done: done}
	if s.watermarkReads() {
		return newWatermarkChunks(r)
	}
	return r, nil
}

type syncerChunks struct {
	conn *client.Conn
	done func()
}

func (r *syncerChunks) close() { r.done() }

// chunkQuery is the SELECT of up to n rows of t after the key after.
func chunkQuery(t *snapTable, after []any, n int) (string, error) {
	q := "SELECT " + t.selectList + " FROM " + quoteName(t.table.Schema, t.table.Name) + " FORCE INDEX (" + quoteIdent(t.index) + ")"
	if after != nil {
		cond, err := t.after(after)
		if err != nil {
			return "", err
		}
		q += " WHERE " + cond
	}
	return q + " ORDER BY " + t.orderBy + " LIMIT " + strconv.Itoa(n), nil
}

func (r *syncerChunks) readChunk(t *snapTable, after []any, n int) (*chunkRead, error) {
	q, err := chunkQuery(t, after, n)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if _, err := r.conn.Execute("START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return nil, fmt.Errorf("binlogstream: snapshot of %s: %w", t.id, err)
	}
	res, err := r.read(q, t.hidden)
	if _, cerr := r.conn.Execute("COMMIT"); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("binlogstream: snapshot of %s: %w", t.id, err)
	}
	res.age = time.Since(began)
	if err := r.keys(t, res); err != nil {
		return nil, err
	}
	return res, nil
}

// read runs the status query and the SELECT inside the transaction.
func (r *syncerChunks) read(q string, hidden int) (*chunkRead, error) {
	st, err := r.conn.Execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return nil, err
	}
	res := &chunkRead{}
	for i := range st.RowNumber() {
		name, _ := st.GetString(i, 0)
		val, _ := st.GetString(i, 1)
		switch strings.ToLower(name) {
		case "binlog_snapshot_file":
			res.at.File = strings.Clone(val)
		case "binlog_snapshot_position":
			res.at.Offset, _ = strconv.ParseUint(val, 10, 64)
		}
	}
	if res.at.File == "" {
		return nil, errors.New("the server reports no Binlog_snapshot_file (not MariaDB, or log_bin=OFF)")
	}
	return res, r.selectRows(q, res, hidden)
}

// selectRows streams the chunk's SELECT q into res.rows.
func (r *syncerChunks) selectRows(q string, res *chunkRead, hidden int) error {
	var sl chunkSlab
	var result mysql.Result
	return r.conn.ExecuteSelectStreaming(q, &result, func(row []mysql.FieldValue) error {
		res.rows = append(res.rows, sl.row(row, result.Fields, hidden))
		return nil
	}, nil)
}

// chunkSlab holds the values of a chunk's rows in a few large
// allocations rather than several per row: the rows' value slices, and
// the bytes of their strings (go-mysql reuses a streamed row's memory).
// Nothing in it is written after its row is made.
type chunkSlab struct {
	vals []any
	text []byte
}

// slabValues and slabText are the sizes of new slabs.
const (
	slabValues = 4096
	slabText   = 64 << 10
)

// row converts one streamed row (see fieldRaw), followed by hidden
// Absent values.
func (s *chunkSlab) row(vals []mysql.FieldValue, fields []*mysql.Field, hidden int) []any {
	n := len(vals) + hidden
	if cap(s.vals)-len(s.vals) < n {
		s.vals = make([]any, 0, max(slabValues, n))
	}
	row := s.vals[len(s.vals) : len(s.vals)+n : len(s.vals)+n]
	s.vals = s.vals[:len(s.vals)+n]
	for j := range vals {
		row[j] = s.value(&vals[j], fields[j])
	}
	for j := len(vals); j < n; j++ {
		row[j] = Absent
	}
	return row
}

// bytes copies b into the slab.
func (s *chunkSlab) bytes(b []byte) []byte {
	if len(b) > slabText/4 {
		return bytes.Clone(b)
	}
	if cap(s.text)-len(s.text) < len(b) {
		s.text = make([]byte, 0, slabText)
	}
	i := len(s.text)
	s.text = append(s.text, b...)
	return s.text[i:len(s.text):len(s.text)]
}

// fieldRaw is a text-protocol value in the form go-mysql's binlog decoder
// gives for the column (the input of Table.Value).
func fieldRaw(v *mysql.FieldValue, f *mysql.Field) any {
	var s chunkSlab
	return s.value(v, f)
}

// value is fieldRaw with the value's bytes in the slab.
func (s *chunkSlab) value(v *mysql.FieldValue, f *mysql.Field) any {
	switch v.Type {
	case mysql.FieldValueTypeNull:
		return nil
	case mysql.FieldValueTypeSigned:
		return v.AsInt64()
	case mysql.FieldValueTypeUnsigned:
		return v.AsUint64()
	case mysql.FieldValueTypeFloat:
		if f.Type == mysql.MYSQL_TYPE_FLOAT {
			return float32(v.AsFloat64())
		}
		return v.AsFloat64()
	}
	raw := v.AsString()
	switch f.Type {
	case mysql.MYSQL_TYPE_BIT:
		var n int64
		for _, c := range raw {
			n = n<<8 | int64(c)
		}
		return n
	case mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB, mysql.MYSQL_TYPE_BLOB,
		mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_JSON:
		return s.bytes(raw)
	}
	if f.Charset == 63 && f.Type != mysql.MYSQL_TYPE_NEWDECIMAL && f.Type != mysql.MYSQL_TYPE_DECIMAL && !isTemporalField(f.Type) {
		return s.bytes(raw) // BINARY, VARBINARY
	}
	if len(raw) == 0 {
		return ""
	}
	b := s.bytes(raw)
	return unsafe.String(&b[0], len(b)) // the slab's bytes are never written again
}

func isTemporalField(t byte) bool {
	switch t {
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE, mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2,
		mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_YEAR:
		return true
	}
	return false
}

// keys makes the keys of a chunk's rows, after its transaction ended.
func (r *syncerChunks) keys(t *snapTable, res *chunkRead) error {
	res.keys = make([]snapshot.Key, len(res.rows))
	ptrs := make([]*snapshot.Key, len(res.rows))
	for i, row := range res.rows {
		k, err := t.keyOf(t.table, chunkRow(t, row))
		if err != nil {
			return err
		}
		res.keys[i] = k
		ptrs[i] = &res.keys[i]
	}
	return r.keyCmp(t, ptrs)
}

// chunkRow maps ENUM and SET members read as text to the indexes and
// bitmasks the binlog holds, in place.
func chunkRow(t *snapTable, row []any) []any {
	for i := range row {
		c := &t.table.Columns[i]
		s, ok := row[i].(string)
		if !ok || len(c.Elems) == 0 {
			continue
		}
		switch c.DataType {
		case "enum":
			row[i] = int64(slices.Index(c.Elems, s) + 1)
		case "set":
			var m int64
			for _, e := range strings.Split(s, ",") {
				if j := slices.Index(c.Elems, e); j >= 0 {
					m |= 1 << j
				}
			}
			row[i] = m
		}
	}
	return row
}

// weightBatch bounds the WEIGHT_STRING expressions of one query.
const weightBatch = 512

func (r *syncerChunks) keyCmp(t *snapTable, keys []*snapshot.Key) error {
	for _, k := range keys {
		if len(k.Cmp) != len(k.Raw) {
			k.Cmp = make([]any, len(k.Raw))
		}
		for j, raw := range k.Raw {
			if t.kinds[j] == cmpWeight {
				continue
			}
			c, err := localCmp(t.kinds[j], raw)
			if err != nil {
				return fmt.Errorf("%s: %w", t.id, err)
			}
			k.Cmp[j] = c
		}
	}
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
		rs, err := r.conn.Execute("SELECT " + strings.Join(exprs, ", "))
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
			if t.kinds[j] != cmpWeight {
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
			lit, err := t.literal(j, b)
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
