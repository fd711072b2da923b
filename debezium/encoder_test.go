package debezium_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// assertGolden asserts that got is testdata/NAME.golden, which -update
// rewrites first.
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

// col is a column of the test tables.
func col(name, typ, dt string, f func(c *binlogstream.Column)) binlogstream.Column {
	c := binlogstream.Column{Name: name, Type: typ, DataType: dt, Nullable: true}
	if f != nil {
		f(&c)
	}
	return c
}

func notNull(c *binlogstream.Column) { c.Nullable = false }

// typeCase is one column family: the column, go-mysql's value of it, and
// the value Debezium's documentation gives it.
type typeCase struct {
	col  binlogstream.Column
	raw  any
	want string // the after image's field, as JSON
	// doc names the section of Debezium's MySQL connector documentation
	// ("Data type mappings") the representation follows.
	doc string
}

// wkbPoint is a POINT's SRID and WKB as the binlog holds them.
func wkbPoint(srid uint32, x, y float64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, srid)
	b = append(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

// typeCases cover every column family, in the default modes.
var typeCases = []typeCase{
	{col("id", "int", "int", notNull), int32(7), `7`, "Basic types: INT is INT32"},
	{col("ti", "tinyint", "tinyint", nil), int8(-5), `-5`, "Basic types: TINYINT is INT16"},
	{col("tiu", "tinyint unsigned", "tinyint", func(c *binlogstream.Column) { c.Unsigned = true }), int8(-1), `255`, "Basic types: TINYINT is INT16"},
	{col("si", "smallint", "smallint", nil), int16(-300), `-300`, "Basic types: SMALLINT is INT16"},
	{col("siu", "smallint unsigned", "smallint", func(c *binlogstream.Column) { c.Unsigned = true }), int16(-1), `65535`, "Basic types: SMALLINT UNSIGNED is INT32"},
	{col("mi", "mediumint", "mediumint", nil), int32(-8388608), `-8388608`, "Basic types: MEDIUMINT is INT32"},
	{col("iu", "int unsigned", "int", func(c *binlogstream.Column) { c.Unsigned = true }), int32(-1), `4294967295`, "Basic types: INT UNSIGNED is INT64"},
	{col("bi", "bigint", "bigint", nil), int64(math.MinInt64), `-9223372036854775808`, "Basic types: BIGINT is INT64"},
	{col("biu", "bigint unsigned", "bigint", func(c *binlogstream.Column) { c.Unsigned = true }), int64(-1), `-1`,
		"Basic types: BIGINT UNSIGNED with bigint.unsigned.handling.mode=long (the default) is INT64"},
	{col("fl", "float", "float", nil), float32(1.5), `1.5`, "Basic types: FLOAT is FLOAT32"},
	{col("db", "double", "double", nil), float64(-2.25e-10), `-2.25e-10`, "Basic types: DOUBLE is FLOAT64"},
	{col("dec", "decimal(10,2)", "decimal", func(c *binlogstream.Column) { c.Precision, c.Scale = 10, 2 }), "12.50", `"BOI="`,
		"Decimal types: decimal.handling.mode=precise, BYTES of the unscaled value 1250 (0x04E2)"},
	{col("decn", "decimal(5,3)", "decimal", func(c *binlogstream.Column) { c.Precision, c.Scale = 5, 3 }), "-1.000", `"/Bg="`,
		"Decimal types: precise, the unscaled -1000 in two's complement (0xFC18)"},
	{col("vc", "varchar(20)", "varchar", func(c *binlogstream.Column) { c.Charset = "utf8mb4" }), "héllo \"q\"\n", `"héllo \"q\"\n"`, "Basic types: VARCHAR is STRING"},
	{col("l1", "char(4)", "char", func(c *binlogstream.Column) { c.Charset = "latin1" }), "caf\xe9", `"café"`, "Basic types: CHAR is STRING, decoded from the column's charset"},
	{col("sj", "text", "text", func(c *binlogstream.Column) { c.Charset = "sjis" }), "\x93\xfa\x96\x7b", `"日本"`, "Basic types: TEXT is STRING, decoded from the column's charset"},
	{col("bin", "binary(4)", "binary", func(c *binlogstream.Column) { c.Charset, c.Length = "binary", 4 }), []byte{0xFF, 0}, `"/wAAAA=="`,
		"Basic types: BINARY is BYTES (binary.handling.mode=bytes), JsonConverter's base64"},
	{col("blb", "blob", "blob", func(c *binlogstream.Column) { c.Charset = "binary" }), []byte("hi"), `"aGk="`, "Basic types: BLOB is BYTES"},
	{col("dt0", "date", "date", nil), "2018-06-20", `17702`, "Temporal types: DATE is io.debezium.time.Date, days since the epoch"},
	{col("dz", "date", "date", nil), "0000-00-00", `null`, "Temporal types: a zero date of a nullable column is null"},
	{col("dzn", "date", "date", notNull), "0000-00-00", `0`, "Temporal types: a zero date of a NOT NULL column is the epoch"},
	{col("tm", "time(1)", "time", func(c *binlogstream.Column) { c.FSP = 1 }), "-01:02:03.5", `-3723500000`, "Temporal types: TIME is io.debezium.time.MicroTime"},
	{col("tmb", "time", "time", nil), "838:59:59", `3020399000000`, "Temporal types: TIME is MicroTime, past 24 hours too"},
	{col("dtm", "datetime", "datetime", nil), "2018-06-20 06:37:03", `1529476623000`, "Temporal values without time zones: DATETIME(0-3) is io.debezium.time.Timestamp (milliseconds)"},
	{col("dtm3", "datetime(3)", "datetime", func(c *binlogstream.Column) { c.FSP = 3 }), "2018-06-20 06:37:03.123", `1529476623123`, "Temporal types: DATETIME(3) is Timestamp"},
	{col("dtm6", "datetime(6)", "datetime", func(c *binlogstream.Column) { c.FSP = 6 }), "2018-06-20 06:37:03.000001", `1529476623000001`,
		"Temporal types: DATETIME(4-6) is io.debezium.time.MicroTimestamp (microseconds)"},
	{col("ts", "timestamp", "timestamp", nil), "2018-06-20 13:37:03", `"2018-06-20T13:37:03Z"`, "Temporal values with time zones: TIMESTAMP is io.debezium.time.ZonedTimestamp in UTC"},
	{col("ts6", "timestamp(6)", "timestamp", func(c *binlogstream.Column) { c.FSP = 6 }), "2018-06-20 13:37:03.500000", `"2018-06-20T13:37:03.500000Z"`,
		"Temporal types: ZonedTimestamp with the column's fractional digits"},
	{col("yr", "year", "year", nil), 2024, `2024`, "Temporal types: YEAR is io.debezium.time.Year (INT32)"},
	{col("b1", "bit(1)", "bit", func(c *binlogstream.Column) { c.Length = 1 }), int64(1), `true`, "Basic types: BIT(1) is BOOLEAN"},
	{col("b12", "bit(12)", "bit", func(c *binlogstream.Column) { c.Length = 12 }), int64(0x102), `"AgE="`,
		"Basic types: BIT(>1) is io.debezium.data.Bits, bytes little-endian, n/8 rounded up of them"},
	{col("en", "enum('a','b')", "enum", func(c *binlogstream.Column) { c.Elems = []string{"a", "b"} }), int64(2), `"b"`, "Basic types: ENUM is io.debezium.data.Enum"},
	{col("st", "set('x','y','z')", "set", func(c *binlogstream.Column) { c.Elems = []string{"x", "y", "z"} }), int64(5), `"x,z"`, "Basic types: SET is io.debezium.data.EnumSet"},
	{col("js", "json", "json", func(c *binlogstream.Column) { c.Charset = "utf8mb4" }), `{"k": [1, 2]}`, `"{\"k\": [1, 2]}"`, "Basic types: JSON is io.debezium.data.Json, a STRING"},
	{col("geo", "geometry", "geometry", nil), wkbPoint(4326, 1, 2), `{"wkb":"AQEAAAAAAAAAAADwPwAAAAAAAABA","srid":4326}`,
		"Spatial types: GEOMETRY is io.debezium.data.geometry.Geometry {wkb, srid}"},
	{col("pt", "point", "point", nil), wkbPoint(0, 1, 2), `{"x":1,"y":2,"wkb":"AQEAAAAAAAAAAADwPwAAAAAAAABA","srid":null}`,
		"Spatial types: POINT is io.debezium.data.geometry.Point {x, y, wkb, srid}; SRID 0 (unset) is null (MySqlGeometry.fromBytes)"},
	{col("nul", "int", "int", nil), nil, `null`, "NULL is null"},
	{col("tsz", "timestamp", "timestamp", notNull), "0000-00-00 00:00:00", `"1970-01-01T00:00:00Z"`, "Temporal types: a zero TIMESTAMP of a NOT NULL column is the epoch"},
	{col("tsz3", "timestamp(3)", "timestamp", func(c *binlogstream.Column) { c.FSP, c.Nullable = 3, false }), "0000-00-00 00:00:00.000",
		`"1970-01-01T00:00:00.000Z"`, "Temporal types: a zero TIMESTAMP(3) of a NOT NULL column is the epoch, with the column's 3 fractional digits as ZonedTimestamp pads every value (RowDeserializers reads the zero as epoch 0)"},
	{col("uu", "uuid", "uuid", nil), []byte{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00},
		`"123e4567-e89b-12d3-a456-426614174000"`, "not a MySQL type: MariaDB's UUID as its text"},
}

func typesTable() *binlogstream.Table {
	t := &binlogstream.Table{Schema: "app", Name: "all_types", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory}
	for _, c := range typeCases {
		t.Columns = append(t.Columns, c.col)
	}
	return t
}

func typesRow() []any {
	row := make([]any, len(typeCases))
	for i, c := range typeCases {
		row[i] = c.raw
	}
	return row
}

// rowsEvent is a rows event of tbl with its rows, as delivered.
func rowsEvent(typ replication.EventType, tbl *binlogstream.Table, gtid string, pos uint64, rows ...[]any) binlogstream.Event {
	return binlogstream.Event{
		BinlogEvent: &replication.BinlogEvent{
			Header: &replication.EventHeader{EventType: typ, Timestamp: 1700000000, ServerID: 1},
			Event:  &replication.RowsEvent{Rows: rows},
		},
		Start: binlogstream.Position{File: "mysql-bin.000001", Offset: pos},
		End:   binlogstream.Position{File: "mysql-bin.000001", Offset: pos + 100},
		GTID:  gtid, Table: tbl,
	}
}

func gtidEvent(gtid string, pos uint64) binlogstream.Event {
	return binlogstream.Event{BinlogEvent: &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.MARIADB_GTID_EVENT, Timestamp: 1700000000, ServerID: 1},
		Event:  &replication.MariadbGTIDEvent{}}, GTID: gtid,
		Start: binlogstream.Position{File: "mysql-bin.000001", Offset: pos}, End: binlogstream.Position{File: "mysql-bin.000001", Offset: pos + 30}}
}

func xidEvent(pos uint64) binlogstream.Event {
	return binlogstream.Event{BinlogEvent: &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.XID_EVENT, Timestamp: 1700000000, ServerID: 1},
		Event:  &replication.XIDEvent{}}}
}

func queryEvent(schema, q string, pos uint64) binlogstream.Event {
	return binlogstream.Event{BinlogEvent: &replication.BinlogEvent{
		Header: &replication.EventHeader{EventType: replication.QUERY_EVENT, Timestamp: 1700000000, ServerID: 1},
		Event:  &replication.QueryEvent{Schema: []byte(schema), Query: []byte(q), SlaveProxyID: 42}},
		Start: binlogstream.Position{File: "mysql-bin.000001", Offset: pos}, End: binlogstream.Position{File: "mysql-bin.000001", Offset: pos + 80}}
}

func readEvent(tbl *binlogstream.Table, row []any) binlogstream.Event {
	return binlogstream.Event{BinlogEvent: &replication.BinlogEvent{Event: &binlogstream.SnapshotRead{Row: row}},
		Start: binlogstream.Position{File: "mysql-bin.000001", Offset: 4}, End: binlogstream.Position{File: "mysql-bin.000001", Offset: 4}, Table: tbl}
}

func encode(t *testing.T, opts debezium.Options, evs ...binlogstream.Event) []debezium.Record {
	t.Helper()
	enc, err := debezium.NewEncoder(opts)
	require.NoError(t, err)
	var recs []debezium.Record
	for i := range evs {
		recs, err = enc.Append(recs, &evs[i])
		require.NoError(t, err)
	}
	return recs
}

// payload is a record's value's payload (the value itself without schemas).
func payload(t *testing.T, v []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(v, &m))
	if p, ok := m["payload"]; ok {
		require.NoError(t, json.Unmarshal(p, &m))
	}
	return m
}

// TestColumnValues checks every column family's value against the
// representation Debezium documents for it.
func TestColumnValues(t *testing.T) {
	tbl := typesTable()
	recs := encode(t, debezium.Options{}, gtidEvent("0-1-5", 100), rowsEvent(replication.WRITE_ROWS_EVENTv2, tbl, "0-1-5", 200, typesRow()))
	require.Len(t, recs, 1)
	var after map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(payload(t, recs[0].Value)["after"], &after))
	for _, c := range typeCases {
		assert.JSONEq(t, c.want, string(after[c.col.Name]), "%s (%s): %s", c.col.Name, c.col.Type, c.doc)
	}
}

// TestDecimalModes: decimal.handling.mode's three representations.
func TestDecimalModes(t *testing.T) {
	tbl := &binlogstream.Table{Schema: "app", Name: "d", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("id", "int", "int", notNull),
			col("dec", "decimal(10,2)", "decimal", func(c *binlogstream.Column) { c.Precision, c.Scale = 10, 2 })}}
	for _, tc := range []struct {
		mode   debezium.DecimalHandling
		value  string
		schema string
	}{
		{"", `"BOI="`, `{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"dec"}`},
		{debezium.DecimalString, `"12.50"`, `{"type":"string","optional":true,"field":"dec"}`},
		{debezium.DecimalDouble, `12.5`, `{"type":"double","optional":true,"field":"dec"}`},
	} {
		recs := encode(t, debezium.Options{DecimalHandling: tc.mode, Schemas: true}, rowsEvent(replication.WRITE_ROWS_EVENTv2, tbl, "", 200, []any{int32(1), "12.50"}))
		var after map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(payload(t, recs[0].Value)["after"], &after))
		assert.JSONEq(t, tc.value, string(after["dec"]), "mode %q", tc.mode)
		assert.Contains(t, string(recs[0].Value), tc.schema, "mode %q", tc.mode)
	}
	_, err := debezium.NewEncoder(debezium.Options{DecimalHandling: "exact"})
	assert.ErrorContains(t, err, "want precise, string or double")
}

// TestGolden compares whole records, schemas on and off and in each
// decimal mode, with testdata/*.golden (go test -update rewrites them;
// review the diff against docs/debezium.md).
func TestGolden(t *testing.T) {
	tbl := typesTable()
	small := &binlogstream.Table{Schema: "app", Name: "kv", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull), col("v", "varchar(10)", "varchar", func(c *binlogstream.Column) { c.Charset, c.Length = "utf8mb4", 10 })}}
	evs := func() []binlogstream.Event {
		return []binlogstream.Event{
			readEvent(small, []any{int32(0), "read"}),
			ddlEvent("CREATE TABLE kv (k INT PRIMARY KEY, v VARCHAR(10))", 50,
				binlogstream.TableChange{Schema: "app", Name: "kv", Table: small, Charset: "utf8mb4"}),
			gtidEvent("0-1-5", 100),
			rowsEvent(replication.WRITE_ROWS_EVENTv2, tbl, "0-1-5", 200, typesRow()),
			rowsEvent(replication.WRITE_ROWS_EVENTv2, small, "0-1-5", 300, []any{int32(1), "a"}, []any{int32(2), "b"}),
			rowsEvent(replication.UPDATE_ROWS_EVENTv2, small, "0-1-5", 400, []any{int32(1), "a"}, []any{int32(1), "a2"}, []any{int32(2), "b"}, []any{int32(3), "b"}),
			rowsEvent(replication.DELETE_ROWS_EVENTv2, small, "0-1-5", 500, []any{int32(3), "b"}),
			xidEvent(600),
			queryEvent("app", "CREATE USER u IDENTIFIED BY 'hunter2'", 700),
		}
	}
	for _, tc := range []struct {
		name string
		opts debezium.Options
	}{
		{"default", debezium.Options{}},
		{"schemas", debezium.Options{Schemas: true}},
		{"decimal-string", debezium.Options{DecimalHandling: debezium.DecimalString}},
		{"decimal-double-schemas", debezium.Options{DecimalHandling: debezium.DecimalDouble, Schemas: true}},
		{"no-tombstones", debezium.Options{NoTombstones: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			for _, r := range encode(t, tc.opts, evs()...) {
				fmt.Fprintf(&b, "%s\t%s\t%s\n", r.Topic, r.Key, orNull(r.Value))
			}
			assert.NotContains(t, b.String(), "hunter2", "the DDL's secret is masked")
			assertGolden(t, tc.name, b.Bytes())
			for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
				f := strings.Split(l, "\t")
				for _, j := range f[1:] {
					assert.True(t, json.Valid([]byte(j)), "valid JSON: %s", j)
				}
			}
		})
	}
}

func orNull(b []byte) []byte {
	if b == nil {
		return []byte("null")
	}
	return b
}

// TestOps: each op, a primary-key change as a delete and a create, the
// tombstones, and the transaction block's counters.
func TestOps(t *testing.T) {
	kv := &binlogstream.Table{Schema: "app", Name: "kv", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull), col("v", "int", "int", nil)}}
	other := &binlogstream.Table{Schema: "app", Name: "other", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull)}}
	recs := encode(t, debezium.Options{},
		gtidEvent("0-1-9", 100),
		rowsEvent(replication.WRITE_ROWS_EVENTv2, kv, "0-1-9", 200, []any{int32(1), int32(10)}),
		rowsEvent(replication.WRITE_ROWS_EVENTv2, other, "0-1-9", 250, []any{int32(1)}),
		rowsEvent(replication.UPDATE_ROWS_EVENTv2, kv, "0-1-9", 300, []any{int32(1), int32(10)}, []any{int32(1), int32(11)},
			[]any{int32(1), int32(11)}, []any{int32(2), int32(11)}),
		rowsEvent(replication.DELETE_ROWS_EVENTv2, kv, "0-1-9", 400, []any{int32(2), int32(11)}),
		xidEvent(500),
	)
	type got struct{ topic, key, op, before, after, tx string }
	var all []got
	for _, r := range recs {
		g := got{topic: r.Topic, key: string(r.Key)}
		if r.Value != nil {
			p := payload(t, r.Value)
			g.op, g.before, g.after, g.tx = string(p["op"]), string(p["before"]), string(p["after"]), string(p["transaction"])
		}
		all = append(all, g)
	}
	tx := func(total, dc int) string {
		return fmt.Sprintf(`{"id":"0-1-9","total_order":%d,"data_collection_order":%d}`, total, dc)
	}
	assert.Equal(t, []got{
		{"binlog.app.kv", `{"k":1}`, `"c"`, `null`, `{"k":1,"v":10}`, tx(1, 1)},
		{"binlog.app.other", `{"k":1}`, `"c"`, `null`, `{"k":1}`, tx(2, 1)},
		{"binlog.app.kv", `{"k":1}`, `"u"`, `{"k":1,"v":10}`, `{"k":1,"v":11}`, tx(3, 2)},
		// k 1 -> 2: never an update between two keys.
		{"binlog.app.kv", `{"k":1}`, `"d"`, `{"k":1,"v":11}`, `null`, tx(4, 3)},
		{"binlog.app.kv", `{"k":1}`, "", "", "", ""}, // tombstone
		{"binlog.app.kv", `{"k":2}`, `"c"`, `null`, `{"k":2,"v":11}`, tx(5, 4)},
		{"binlog.app.kv", `{"k":2}`, `"d"`, `{"k":2,"v":11}`, `null`, tx(6, 5)},
		{"binlog.app.kv", `{"k":2}`, "", "", "", ""},
	}, all)
	var lasts []bool
	for _, r := range recs {
		lasts = append(lasts, r.Last)
	}
	assert.Equal(t, []bool{true, true, true, false, false, true, false, true}, lasts, "Last ends each row change's records")

	// The source of a streamed change.
	var src map[string]any
	require.NoError(t, json.Unmarshal(payload(t, recs[2].Value)["source"], &src))
	assert.Equal(t, map[string]any{"version": "binlogstream", "connector": "mysql", "name": "binlog", "ts_ms": 1700000000000.0,
		"snapshot": "false", "db": "app", "sequence": nil, "ts_us": 1700000000000000.0, "ts_ns": 1700000000000000000.0, "table": "kv", "server_id": 1.0, "gtid": "0-1-9",
		"file": "mysql-bin.000001", "pos": 300.0, "row": 0.0, "thread": nil, "query": nil}, src)
	require.NoError(t, json.Unmarshal(payload(t, recs[5].Value)["source"], &src))
	assert.Equal(t, 1.0, src["row"], "the update's second row change")

	t.Run("no tombstones", func(t *testing.T) {
		recs := encode(t, debezium.Options{NoTombstones: true, TopicPrefix: "srv"},
			rowsEvent(replication.DELETE_ROWS_EVENTv2, kv, "", 400, []any{int32(2), int32(11)}))
		require.Len(t, recs, 1)
		assert.Equal(t, "srv.app.kv", recs[0].Topic)
		assert.True(t, recs[0].Last)
	})
}

// TestSnapshotMarkers: the first read is "first", the one that ends the
// snapshot "last", those between "true"; streamed changes "false".
func TestSnapshotMarkers(t *testing.T) {
	kv := &binlogstream.Table{Schema: "app", Name: "kv", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull)}}
	enc, err := debezium.NewEncoder(debezium.Options{})
	require.NoError(t, err)
	reads := 0
	enc.SetPending(func(binlogstream.ResumePosition) bool { return reads < 3 })
	var recs []debezium.Record
	for i := range 3 {
		reads++
		ev := readEvent(kv, []any{int32(i)})
		recs, err = enc.Append(recs, &ev)
		require.NoError(t, err)
		if i == 1 {
			ev := rowsEvent(replication.WRITE_ROWS_EVENTv2, kv, "", 300, []any{int32(9)})
			recs, err = enc.Append(recs, &ev)
			require.NoError(t, err)
		}
	}
	var marks, ops []string
	for _, r := range recs {
		p := payload(t, r.Value)
		var src struct{ Snapshot string }
		require.NoError(t, json.Unmarshal(p["source"], &src))
		marks, ops = append(marks, src.Snapshot), append(ops, string(p["op"]))
		if string(p["op"]) == `"r"` {
			assert.Equal(t, "null", string(p["transaction"]), "a read is in no transaction")
		}
	}
	assert.Equal(t, []string{"first", "true", "false", "last"}, marks)
	assert.Equal(t, []string{`"r"`, `"r"`, `"c"`, `"r"`}, ops)

	// A resumed encoder does not mark "first" again.
	enc2, _ := debezium.NewEncoder(debezium.Options{})
	enc2.SetPending(func(binlogstream.ResumePosition) bool { return true })
	enc2.SetState(debezium.State{SnapshotBegun: true})
	ev := readEvent(kv, []any{int32(5)})
	recs, err = enc2.Append(nil, &ev)
	require.NoError(t, err)
	assert.Contains(t, string(recs[0].Value), `"snapshot":"true"`)
}

// TestRestore: a Restorer fed what an encoder wrote, newest first,
// gives back the encoder's state; a resumed encoder then continues the
// transaction's numbering as an uninterrupted one.
func TestRestore(t *testing.T) {
	kv := &binlogstream.Table{Schema: "app", Name: "kv", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull)}}
	other := &binlogstream.Table{Schema: "app", Name: "other", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("k", "int", "int", notNull)}}
	evs := []binlogstream.Event{
		rowsEvent(replication.WRITE_ROWS_EVENTv2, kv, "", 50, []any{int32(100)}), // an earlier transaction
		xidEvent(60),
		queryEvent("app", "BEGIN", 90),
		rowsEvent(replication.WRITE_ROWS_EVENTv2, kv, "", 100, []any{int32(1)}, []any{int32(2)}),
		rowsEvent(replication.DELETE_ROWS_EVENTv2, other, "", 200, []any{int32(1)}),
		rowsEvent(replication.WRITE_ROWS_EVENTv2, kv, "", 300, []any{int32(3)}),
		xidEvent(400),
	}
	for _, schemas := range []bool{false, true} {
		whole := encode(t, debezium.Options{Schemas: schemas}, evs...)
		for cut := 1; cut < len(evs); cut++ {
			enc, _ := debezium.NewEncoder(debezium.Options{Schemas: schemas})
			var first []debezium.Record
			for i := range evs[:cut] {
				first, _ = enc.Append(first, &evs[i])
			}
			if _, isRows := evs[cut-1].Event.(*replication.RowsEvent); !isRows {
				continue // a file's last record, and its resume token, follow a rows event
			}
			r := debezium.NewRestorer(false)
			for i := len(first) - 1; i >= 0 && !r.Done(); i-- {
				require.NoError(t, r.Add(first[i].Value))
			}
			r.AtStart()
			enc2, _ := debezium.NewEncoder(debezium.Options{Schemas: schemas})
			enc2.SetState(r.State())
			rest := first
			for i := range evs[cut:] {
				var err error
				rest, err = enc2.Append(rest, &evs[cut+i])
				require.NoError(t, err)
			}
			assert.Equal(t, whole, rest, "cut after event %d, schemas %v", cut, schemas)
		}
	}
}

// TestBinaryModes: binary.handling.mode's string forms.
func TestBinaryModes(t *testing.T) {
	tbl := &binlogstream.Table{Schema: "app", Name: "b", PrimaryKey: []int{0}, Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("id", "int", "int", notNull), col("b", "varbinary(4)", "varbinary", func(c *binlogstream.Column) { c.Charset = "binary" })}}
	for mode, want := range map[debezium.BinaryHandling]string{"": `"+/8="`, debezium.BinaryBase64: `"+/8="`,
		debezium.BinaryBase64URLSafe: `"-_8="`, debezium.BinaryHex: `"fbff"`} {
		recs := encode(t, debezium.Options{BinaryHandling: mode, Schemas: true}, rowsEvent(replication.WRITE_ROWS_EVENTv2, tbl, "", 200, []any{int32(1), []byte{0xfb, 0xff}}))
		var after map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(payload(t, recs[0].Value)["after"], &after))
		assert.Equal(t, want, string(after["b"]), "mode %q", mode)
		typ := `{"type":"string","optional":true,"field":"b"}`
		if mode == "" {
			typ = `{"type":"bytes","optional":true,"field":"b"}`
		}
		assert.Contains(t, string(recs[0].Value), typ, "mode %q", mode)
	}
}

// TestNoPrimaryKeyAndUnknownColumns: a table without a primary key has a
// null key and no tombstone; one without column names is refused.
func TestNoPrimaryKeyAndUnknownColumns(t *testing.T) {
	nopk := &binlogstream.Table{Schema: "app", Name: "log", Source: binlogstream.SchemaFromHistory,
		Columns: []binlogstream.Column{col("msg", "int", "int", nil)}}
	recs := encode(t, debezium.Options{}, rowsEvent(replication.DELETE_ROWS_EVENTv2, nopk, "", 200, []any{int32(1)}))
	require.Len(t, recs, 1)
	assert.Nil(t, recs[0].Key)
	assert.True(t, recs[0].Last)

	unknown := &binlogstream.Table{Schema: "app", Name: "old", Unknown: "no history", Columns: []binlogstream.Column{{}}}
	enc, _ := debezium.NewEncoder(debezium.Options{})
	ev := rowsEvent(replication.WRITE_ROWS_EVENTv2, unknown, "", 200, []any{int32(1)})
	_, err := enc.Append(nil, &ev)
	assert.ErrorIs(t, err, debezium.ErrUnknownColumns)
}
