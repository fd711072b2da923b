// Package valuecases holds the column types and edge values the
// differential value tests write on a real server, and what the server
// says of them, for the library's test and binlog-tail's alike.
package valuecases

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// Col is a column of the differential test: its declaration, the SQL literals
// of its rows, and the server expression whose text our value must equal
// once rendered by render.
type Col struct {
	Name, Decl string
	Vals       []string
	Server     string // %s is the column
	Render     string // "num", "utf8hex", "hex", "text", "geom"
}

// Columns are the types the DDL parser reads, in a table created in the
// stream.
var Columns = []Col{
	{"ti", "TINYINT", []string{"-128", "127", "-1", "0", "1"}, "%s", "num"},
	{"tu", "TINYINT UNSIGNED", []string{"0", "255", "128", "127", "1"}, "%s", "num"},
	{"si", "SMALLINT", []string{"-32768", "32767", "0", "-1", "1"}, "%s", "num"},
	{"su", "SMALLINT UNSIGNED", []string{"65535", "32768", "32767", "0", "1"}, "%s", "num"},
	{"mi", "MEDIUMINT", []string{"-8388608", "8388607", "-1", "0", "1"}, "%s", "num"},
	{"mu", "MEDIUMINT UNSIGNED", []string{"16777215", "8388608", "0", "8388607", "1"}, "%s", "num"},
	{"i", "INT", []string{"-2147483648", "2147483647", "-1", "0", "1"}, "%s", "num"},
	{"iu", "INT UNSIGNED", []string{"4294967295", "2147483648", "2147483647", "0", "1"}, "%s", "num"},
	{"bi", "BIGINT", []string{"-9223372036854775808", "9223372036854775807", "-1", "0", "1"}, "%s", "num"},
	{"bu", "BIGINT UNSIGNED", []string{"18446744073709551615", "9223372036854775808", "0", "9223372036854775807", "1"}, "%s", "num"},
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
	// MariaDB's own collation ids (NO PAD, UCA 14.0.0), which MINIMAL and
	// FULL row metadata give instead of the charset.
	{"lnp", "VARCHAR(5) CHARACTER SET latin1 COLLATE latin1_swedish_nopad_ci", []string{"'é'", "'ÿx'", "''"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"u16u", "VARCHAR(5) CHARACTER SET utf16 COLLATE utf16_uca1400_ai_ci", []string{"'漢é'", "'😀'", "'a'"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"tx", "TEXT", []string{"'hello'", "''", "REPEAT('z', 300)"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	// MariaDB's COMPRESSED columns (binlog types 140 and 141): values that
	// compress, and short ones stored as they are.
	{"tcz", "TEXT COMPRESSED CHARACTER SET latin1", []string{"REPEAT('é', 400)", "'ab'", "''"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"bcz", "BLOB COMPRESSED", []string{"REPEAT(x'00FF', 500)", "x'01'", "''"}, "HEX(%s)", "hex"},
	{"vcz", "VARCHAR(300) COMPRESSED", []string{"REPEAT('漢字', 100)", "'x'", "''"}, "HEX(CONVERT(%s USING utf8mb4))", "utf8hex"},
	{"vbz", "VARBINARY(200) COMPRESSED=zlib", []string{"REPEAT(x'AB', 150)", "x'00'", "''"}, "HEX(%s)", "hex"},
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
	{"tm2", "TIME(2)", []string{"'-838:59:59.99'", "'00:00:00.01'", "'23:59:59.5'"}, "%s", "text"},
	{"tm4", "TIME(4)", []string{"'100:00:00.1234'", "'-00:00:01'", "'00:00:00'"}, "%s", "text"},
	{"tm5", "TIME(5)", []string{"'12:34:56.78901'", "'-12:00:00.00001'", "'838:59:59'"}, "%s", "text"},
	{"dt1", "DATETIME(1)", []string{"'2024-01-02 03:04:05.9'", "'0000-00-00 00:00:00'", "'9999-12-31 23:59:59.9'"}, "%s", "text"},
	{"dt3", "DATETIME(3)", []string{"'2024-01-02 03:04:05.123'", "'1000-01-01 00:00:00'", "'2020-02-29 12:00:00.001'"}, "%s", "text"},
	{"dt4", "DATETIME(4)", []string{"'2024-01-02 03:04:05.1234'", "'0000-00-00 00:00:00'", "'2001-01-01 00:00:00.0001'"}, "%s", "text"},
	{"dt5", "DATETIME(5)", []string{"'2024-01-02 03:04:05.12345'", "'9999-12-31 23:59:59.99999'", "'2000-01-01 00:00:00'"}, "%s", "text"},
	{"ts1", "TIMESTAMP(1) NULL", []string{"'2024-06-01 12:00:00.5'", "'2038-01-19 08:44:07.9'", "'2001-01-01 00:00:00'"},
		"CONVERT_TZ(%s, @@session.time_zone, '+00:00')", "text"},
	{"ts3", "TIMESTAMP(3) NULL", []string{"'2024-06-01 12:00:00.123'", "'1970-01-01 05:30:01.001'", "'2001-01-01 00:00:00'"},
		"CONVERT_TZ(%s, @@session.time_zone, '+00:00')", "text"},
	{"ts4", "TIMESTAMP(4) NULL", []string{"'2024-06-01 12:00:00.1234'", "'2038-01-19 08:44:07.0001'", "'2001-01-01 00:00:00'"},
		"CONVERT_TZ(%s, @@session.time_zone, '+00:00')", "text"},
	{"ts5", "TIMESTAMP(5) NULL", []string{"'2024-06-01 12:00:00.12345'", "'2010-10-10 10:10:10.00001'", "'2001-01-01 00:00:00'"},
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

// Exotic are MariaDB's own types (UUID, INET6, INET4) and GEOMETRY.
var Exotic = []Col{
	{"u", "UUID", []string{"'123e4567-e89b-12d3-a456-426614174000'", "'00000000-0000-0000-0000-000000000000'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'"}, "%s", "text"},
	{"i6", "INET6", []string{"'::ffff:10.0.0.1'", "'::1'", "'2001:db8::8a2e:370:7334'"}, "%s", "text"},
	{"i4", "INET4", []string{"'10.0.0.1'", "'255.255.255.255'", "'0.0.0.0'"}, "%s", "text"},
	{"gm", "GEOMETRY", []string{"ST_GeomFromText('LINESTRING(0 0,1 1)', 4326)", "POINT(1,2)", "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))')"},
		"CONCAT(ST_SRID(%s), ':', HEX(ST_AsWKB(%s)))", "geom"},
}

// TableSQL returns the CREATE TABLE of cols (with an id primary key) and
// the INSERTs of its rows: one per value, then one of NULLs.
func TableSQL(name string, cols []Col) (create string, inserts []string) {
	var decl, names []string
	for _, c := range cols {
		decl = append(decl, c.Name+" "+c.Decl)
		if c.Vals != nil {
			names = append(names, c.Name)
		}
	}
	create = fmt.Sprintf("CREATE TABLE %s (id INT PRIMARY KEY, %s)", name, strings.Join(decl, ", "))
	n := Rows(cols) - 1
	for r := range n {
		vals := []string{strconv.Itoa(r + 1)}
		for _, c := range cols {
			if c.Vals != nil {
				vals = append(vals, c.Vals[r%len(c.Vals)])
			}
		}
		inserts = append(inserts, fmt.Sprintf("INSERT INTO %s (id, %s) VALUES (%s)", name, strings.Join(names, ", "), strings.Join(vals, ", ")))
	}
	nulls := []string{strconv.Itoa(n + 1)}
	for range names {
		nulls = append(nulls, "NULL")
	}
	inserts = append(inserts, fmt.Sprintf("INSERT INTO %s (id, %s) VALUES (%s)", name, strings.Join(names, ", "), strings.Join(nulls, ", ")))
	return create, inserts
}

// ServerRows reads the table back through the expressions of cols, one
// row of strings ("NULL" for NULL) per id.
func ServerRows(t testing.TB, s *mariadb.Server, table string, cols []Col) map[string][]string {
	var exprs []string
	for _, c := range cols {
		exprs = append(exprs, strings.ReplaceAll(c.Server, "%s", c.Name))
	}
	out := map[string][]string{}
	for _, r := range s.Query(t, fmt.Sprintf("SELECT id, %s FROM d.%s ORDER BY id", strings.Join(exprs, ", "), table)) {
		out[r[0]] = r[1:]
	}
	return out
}

// Rows is how many rows TableSQL inserts for cols: one per value of the
// column with the most (the others repeat theirs), then one of NULLs.
func Rows(cols []Col) int {
	n := 0
	for _, c := range cols {
		n = max(n, len(c.Vals))
	}
	return n + 1
}
