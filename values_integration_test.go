package binlogstream_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// A column of the differential test: its declaration, the SQL literals
// of its rows, and the server expression whose text our value must equal
// once rendered by render.
type valueCol struct {
	name, decl string
	vals       []string
	server     string // %[1]s is the column
	render     string // "num", "utf8hex", "hex", "text", "geom"
}

var valueCols = []valueCol{
	{"ti", "TINYINT", []string{"-128", "127", "-1"}, "%s", "num"},
	{"tu", "TINYINT UNSIGNED", []string{"0", "255", "128"}, "%s", "num"},
	{"si", "SMALLINT", []string{"-32768", "32767", "0"}, "%s", "num"},
	{"su", "SMALLINT UNSIGNED", []string{"65535", "32768", "32767"}, "%s", "num"},
	{"mi", "MEDIUMINT", []string{"-8388608", "8388607", "-1"}, "%s", "num"},
	{"mu", "MEDIUMINT UNSIGNED", []string{"16777215", "8388608", "0"}, "%s", "num"},
	{"i", "INT", []string{"-2147483648", "2147483647", "-1"}, "%s", "num"},
	{"iu", "INT UNSIGNED", []string{"4294967295", "2147483648", "2147483647"}, "%s", "num"},
	{"bi", "BIGINT", []string{"-9223372036854775808", "9223372036854775807", "-1"}, "%s", "num"},
	{"bu", "BIGINT UNSIGNED", []string{"18446744073709551615", "9223372036854775808", "0"}, "%s", "num"},
	{"b1", "BIT(1)", []string{"b'1'", "b'0'", "b'1'"}, "%s+0", "num"},
	{"b64", "BIT(64)", []string{"b'" + strings.Repeat("1", 64) + "'", "b'1" + strings.Repeat("0", 63) + "'", "b'101'"}, "%s+0", "num"},
	{"f", "FLOAT", []string{"1.5", "-0.25", "0"}, "%s", "num"},
	{"dbl", "DOUBLE", []string{"2.5", "-1234.5678", "0"}, "%s", "num"},
	{"d1", "DECIMAL(10,2)", []string{"12.50", "-99999999.99", "0"}, "%s", "text"},
	{"d2", "DECIMAL(30,10) UNSIGNED", []string{"12345678901234567890.0123456789", "0.0000000001", "0"}, "%s", "text"},
	{"y", "YEAR", []string{"2024", "'0000'", "1901"}, "%s+0", "num"},
	{"dt", "DATE", []string{"'2024-02-29'", "'0000-00-00'", "'1000-01-01'"}, "%s", "text"},
	{"tm", "TIME", []string{"'-838:59:59'", "'838:59:59'", "'00:00:00'"}, "%s", "text"},
	{"tm3", "TIME(3)", []string{"'12:00:00.500'", "'-01:02:03'", "'00:00:00.001'"}, "%s", "text"},
	{"dtm", "DATETIME", []string{"'2024-01-02 03:04:05'", "'0000-00-00 00:00:00'", "'9999-12-31 23:59:59'"}, "%s", "text"},
	{"dtm6", "DATETIME(6)", []string{"'2024-01-02 03:04:05'", "'9999-12-31 23:59:59.999999'", "'2000-01-01 00:00:00.000001'"}, "%s", "text"},
	{"ts2", "TIMESTAMP(2) NULL", []string{"'2024-06-01 12:00:00.25'", "'2038-01-19 03:14:07'", "'1970-01-02 00:00:00'"},
		"CONVERT_TZ(%s, @@session.time_zone, '+00:00')", "text"},
	{"c5", "CHAR(5)", []string{"'é漢'", "''", "'a  '"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"cl", "CHAR(5) CHARACTER SET latin1", []string{"'Ã©'", "'€'", "'x'"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"va", "VARCHAR(10) CHARACTER SET ascii", []string{"'abc'", "''", "'~'"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"v16", "VARCHAR(10) CHARACTER SET utf16", []string{"'漢AB'", "'AB'", "'😀'"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"v16le", "VARCHAR(10) CHARACTER SET utf16le", []string{"'AB'", "'é'", "''"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"v32", "VARCHAR(10) CHARACTER SET utf32", []string{"'x漢'", "''", "'😀'"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"ucs", "VARCHAR(5) CHARACTER SET ucs2", []string{"'é'", "'AB'", "''"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"cp", "VARCHAR(5) CHARACTER SET cp1251", []string{"'Ж'", "'a'", "''"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"tx", "TEXT", []string{"'hello'", "''", "REPEAT('z', 300)"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"bn", "BINARY(8)", []string{"'ab'", "x'00'", "x'FFFFFFFFFFFFFFFF'"}, "HEX(%s)", "hex"},
	{"vb", "VARBINARY(20)", []string{"x'FF00'", "''", "x'00'"}, "HEX(%s)", "hex"},
	{"bl", "BLOB", []string{"x'00FF'", "''", "REPEAT(x'C3', 70000 DIV 1000)"}, "HEX(%s)", "hex"},
	{"js", "JSON", []string{`'{"a": 1}'`, "'[]'", `'"x"'`}, "%s", "text"},
	{"en", "ENUM('a','b''c')", []string{"'b''c'", "'a'", "'a'"}, "%s", "text"},
	{"st", "SET('x','y','z')", []string{"'x,z'", "''", "'y'"}, "%s", "text"},
	{"b13", "BIT(13)", []string{"b'1000000000001'", "b'0'", "b'1111111111111'"}, "%s+0", "num"},
	{"b33", "BIT(33)", []string{"b'1" + strings.Repeat("0", 32) + "'", "b'1'", "b'" + strings.Repeat("1", 33) + "'"}, "%s+0", "num"},
	{"tm1", "TIME(1)", []string{"'-838:59:59.0'", "'00:00:00.9'", "'10:00:00'"}, "%s", "text"},
	{"tm6", "TIME(6)", []string{"'838:59:59.000000'", "'-00:00:00.000001'", "'01:02:03.456789'"}, "%s", "text"},
	{"dt2", "DATETIME(2)", []string{"'2024-01-02 03:04:05.1'", "'0000-00-00 00:00:00'", "'1000-01-01 00:00:00.99'"}, "%s", "text"},
	{"ts0", "TIMESTAMP NULL", []string{"'2024-06-01 12:00:00'", "'1970-01-01 05:30:01'", "'2000-02-29 23:59:59'"},
		"CONVERT_TZ(%s, @@session.time_zone, '+00:00')", "text"},
	{"ts6", "TIMESTAMP(6) NULL", []string{"'2024-06-01 12:00:00.000001'", "'2038-01-19 08:44:07.999999'", "'2001-01-01 00:00:00'"},
		"CONVERT_TZ(%s, @@session.time_zone, '+00:00')", "text"},
	{"st64", "SET(" + setMembers(64) + ")", []string{"'m1,m64'", "'m33'", "''"}, "%s", "text"},
	{"mb", "MEDIUMBLOB", []string{"REPEAT(x'00FFC3', 350000)", "x'80'", "''"}, "HEX(%s)", "hex"}, // 1 MiB, NUL and invalid UTF-8
	{"gen", "INT AS (tu + 1) VIRTUAL", nil, "%s", "num"},
}

func setMembers(n int) string {
	var m []string
	for i := 1; i <= n; i++ {
		m = append(m, fmt.Sprintf("'m%d'", i))
	}
	return strings.Join(m, ",")
}

// exoticCols are MariaDB's own types, which the DDL parser cannot read:
// known from the snapshot.
var exoticCols = []valueCol{
	{"u", "UUID", []string{"'123e4567-e89b-12d3-a456-426614174000'", "'00000000-0000-0000-0000-000000000000'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'"}, "%s", "text"},
	{"i6", "INET6", []string{"'::ffff:10.0.0.1'", "'::1'", "'2001:db8::8a2e:370:7334'"}, "%s", "text"},
	{"i4", "INET4", []string{"'10.0.0.1'", "'255.255.255.255'", "'0.0.0.0'"}, "%s", "text"},
	{"gm", "GEOMETRY", []string{"ST_GeomFromText('LINESTRING(0 0,1 1)', 4326)", "POINT(1,2)", "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))')"},
		"CONCAT(ST_SRID(%s), ':', HEX(ST_AsWKB(%s)))", "geom"},
}

func renderValue(kind string, v any) string {
	switch kind {
	case "num":
		switch x := v.(type) {
		case float32:
			return strconv.FormatFloat(float64(x), 'g', -1, 32)
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return fmt.Sprint(v)
	case "utf8hex":
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("not a string: %#v", v)
		}
		return strings.ToUpper(hex.EncodeToString([]byte(s)))
	case "hex":
		b, ok := v.([]byte)
		if !ok {
			return fmt.Sprintf("not bytes: %#v", v)
		}
		return strings.ToUpper(hex.EncodeToString(b))
	case "geom":
		g, ok := v.(binlogstream.Geometry)
		if !ok {
			return fmt.Sprintf("not a geometry: %#v", v)
		}
		return fmt.Sprintf("%d:%s", g.SRID, strings.ToUpper(hex.EncodeToString(g.WKB)))
	}
	return fmt.Sprint(v)
}

func valueTableSQL(name string, cols []valueCol) (create string, inserts []string) {
	var decl, names []string
	for _, c := range cols {
		decl = append(decl, c.name+" "+c.decl)
		if c.vals != nil {
			names = append(names, c.name)
		}
	}
	create = fmt.Sprintf("CREATE TABLE %s (id INT PRIMARY KEY, %s)", name, strings.Join(decl, ", "))
	for r := range 3 {
		vals := []string{strconv.Itoa(r + 1)}
		for _, c := range cols {
			if c.vals != nil {
				vals = append(vals, c.vals[r])
			}
		}
		inserts = append(inserts, fmt.Sprintf("INSERT INTO %s (id, %s) VALUES (%s)", name, strings.Join(names, ", "), strings.Join(vals, ", ")))
	}
	nulls := []string{"4"}
	for range names {
		nulls = append(nulls, "NULL")
	}
	inserts = append(inserts, fmt.Sprintf("INSERT INTO %s (id, %s) VALUES (%s)", name, strings.Join(names, ", "), strings.Join(nulls, ", ")))
	return create, inserts
}

// serverRows reads the table back through the expressions of cols, one
// row of strings per id.
func serverRows(t *testing.T, s *mariadb.Server, table string, cols []valueCol) map[string][]string {
	var exprs []string
	for _, c := range cols {
		exprs = append(exprs, strings.ReplaceAll(c.server, "%s", c.name))
	}
	out := map[string][]string{}
	for _, r := range s.Query(t, fmt.Sprintf("SELECT id, %s FROM d.%s ORDER BY id", strings.Join(exprs, ", "), table)) {
		out[r[0]] = r[1:]
	}
	return out
}

// TestIntegrationValuesEqualServer: every column type family, written
// with edge values (integer limits and sign boundaries, BIT(1..64), zero
// dates, negative and large TIME, every fractional precision, a non-UTC
// session time zone, text in utf8mb4, latin1, ascii, utf16, utf16le,
// utf32, ucs2, cp1251, binary strings with NUL and invalid UTF-8 bytes
// and a 1 MiB value, JSON, ENUM, SET of 64 members, a generated column,
// MariaDB's UUID, INET6, INET4 and GEOMETRY, and NULL in every column),
// inserted, updated and deleted, streamed in binlog_row_metadata NO_LOG,
// MINIMAL and FULL with binlog_row_image FULL, MINIMAL and NOBLOB: every
// value of every row image Event.RowValues gives equals the server's own
// SELECT of that row, and a column the image left out is Absent (never
// nil, which is NULL).
func TestIntegrationValuesEqualServer(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	for _, mode := range []string{"NO_LOG", "MINIMAL", "FULL"} {
		for _, image := range []string{"FULL", "MINIMAL", "NOBLOB"} {
			t.Run(mode+"/"+image, func(t *testing.T) {
				valuesEqualServer(t, mode, image)
			})
		}
	}
}

type imageVals struct {
	kind string // insert, before, after, delete
	vals []any
}

func valuesEqualServer(t *testing.T, mode, image string) {
	s := mariadb.Start(t, mariadb.Options{ExtraArgs: []string{"--binlog-row-metadata=" + mode, "--binlog-row-image=" + image,
		"--max-allowed-packet=64M"}})
	createX, insertX := valueTableSQL("x", exoticCols)
	s.Exec(t, "CREATE DATABASE d", "USE d", createX)
	from := masterPos(t, s)
	createV, insertV := valueTableSQL("v", valueCols)
	stmts := append([]string{"USE d", "SET SESSION sql_mode = ''", "SET SESSION time_zone = '+05:30'", createV}, insertV...)
	s.Exec(t, append(stmts, insertX...)...)
	before := map[string]map[string][]string{"v": serverRows(t, s, "v", valueCols), "x": serverRows(t, s, "x", exoticCols)}
	s.Exec(t, "USE d", "UPDATE v SET id = id + 100", "UPDATE x SET id = id + 100", "DELETE FROM v WHERE id > 102", "DELETE FROM x WHERE id > 102")
	target := masterPos(t, s)

	store := binlogstream.NewFileSchemaStore(filepath.Join(t.TempDir(), "h"))
	defer store.Close()
	st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: itSource(t, s), Start: binlogstream.StartAt(from),
		Schema: &binlogstream.SchemaConfig{Store: store, Snapshot: true}})
	require.NoError(t, err)
	got := map[string][]imageVals{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			if !ev.Table.Known() {
				return fmt.Errorf("%s unknown: %s", ev.Table.Name, ev.Table.Unknown)
			}
			kind := binlogstream.RowKind(ev.Header.EventType)
			for i := range re.Rows {
				k := kind
				if kind == "update" {
					k = [...]string{"before", "after"}[i%2]
				}
				got[ev.Table.Name] = append(got[ev.Table.Name], imageVals{k, ev.RowValues(i)})
			}
		}
		if ev.End.Compare(target) >= 0 {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, st.Run(ctx), context.Canceled)

	absent := 0
	for table, cols := range map[string][]valueCol{"v": valueCols, "x": exoticCols} {
		want := before[table]
		require.Equal(t, 4+8+2, len(got[table]), "%s: 4 inserts, 4 updates (2 images), 2 deletes", table)
		for _, im := range got[table] {
			id, ok := im.vals[0].(int64)
			require.True(t, ok, "%s %s: the primary key is in every image: %#v", table, im.kind, im.vals[0])
			if id > 100 {
				id -= 100
			}
			row := want[strconv.FormatInt(id, 10)]
			require.NotNil(t, row, "%s id %d", table, id)
			for k, c := range cols {
				v := im.vals[k+1]
				what := fmt.Sprintf("%s/%s %s.%s id %d %s", mode, image, table, c.name, id, im.kind)
				switch {
				case v == binlogstream.Absent:
					absent++
					assert.NotEqual(t, "FULL", image, "%s: only MINIMAL and NOBLOB images leave columns out", what)
				case row[k] == "NULL":
					assert.Nil(t, v, what)
				default:
					assert.Equal(t, row[k], renderValue(c.render, v), "%s (%.200v)", what, v)
				}
			}
		}
	}
	if image != "FULL" {
		assert.Positive(t, absent, "a %s image leaves columns out", image)
	}
	t.Logf("%s/%s: %d row images compared, %d columns absent", mode, image, len(got["v"])+len(got["x"]), absent)
}
