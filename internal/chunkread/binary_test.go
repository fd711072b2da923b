package chunkread_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/chunkread"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// familiesDDL is a table of every column type family, in the widths
// and fractional digits whose forms differ.
const familiesDDL = "CREATE TABLE t (id INT NOT NULL PRIMARY KEY, " +
	"ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED, mi MEDIUMINT, mu MEDIUMINT UNSIGNED, " +
	"i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, y YEAR, " +
	"dec_ DECIMAL(12,3), dw DECIMAL(65,30), f FLOAT, g DOUBLE, " +
	"c CHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, v VARCHAR(20) CHARACTER SET utf8mb4, " +
	"l VARCHAR(20) CHARACTER SET latin1, tx TEXT, b VARBINARY(16), bn BINARY(4), bl BLOB, " +
	"dt DATE, tm TIME(6), t0 TIME, t3 TIME(3), dtm DATETIME(6), d0 DATETIME, d2 DATETIME(2), " +
	"ts TIMESTAMP(6) NULL, ts0 TIMESTAMP NULL, j JSON, e ENUM('x','y','z'), st SET('p','q','r'), " +
	"bt BIT(12), b64 BIT(64), u UUID, ip INET6, n VARCHAR(5) NULL)"

// familiesColumns are its columns as the schema tracker holds them.
var familiesColumns = func() []schema.Column {
	var cols []schema.Column
	for _, c := range [][2]string{{"id", "int"}, {"ti", "tinyint"}, {"tu", "tinyint"}, {"si", "smallint"}, {"su", "smallint"},
		{"mi", "mediumint"}, {"mu", "mediumint"}, {"i", "int"}, {"iu", "int"}, {"bi", "bigint"}, {"bu", "bigint"}, {"y", "year"},
		{"dec_", "decimal"}, {"dw", "decimal"}, {"f", "float"}, {"g", "double"}, {"c", "char"}, {"v", "varchar"},
		{"l", "varchar"}, {"tx", "text"}, {"b", "varbinary"}, {"bn", "binary"}, {"bl", "blob"}, {"dt", "date"},
		{"tm", "time"}, {"t0", "time"}, {"t3", "time"}, {"dtm", "datetime"}, {"d0", "datetime"}, {"d2", "datetime"},
		{"ts", "timestamp"}, {"ts0", "timestamp"}, {"j", "json"}, {"e", "enum"}, {"st", "set"}, {"bt", "bit"},
		{"b64", "bit"}, {"u", "uuid"}, {"ip", "inet6"}, {"n", "varchar"}} {
		col := schema.Column{Name: c[0], DataType: c[1]}
		switch c[1] {
		case "enum":
			col.Elems = []string{"x", "y", "z"}
		case "set":
			col.Elems = []string{"p", "q", "r"}
		}
		cols = append(cols, col)
	}
	return cols
}()

// TestBinaryReadsAsText: the binary protocol's rows (the default on a
// go-mysql connection) are the text protocol's, value for value and
// type for type, for every column type family: bounds of every
// integer width and sign, DECIMAL at full width, FLOAT to the bit,
// NULLs, zero dates, negative and long TIME, each temporal width's
// fractional digits, TIMESTAMP in UTC whatever the server's zone,
// utf8mb4 and latin1 text, BINARY padding, BIT, UUID and INET6.
func TestBinaryReadsAsText(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "SET GLOBAL time_zone = '+05:30'", "CREATE DATABASE d", "USE d", familiesDDL,
		"SET SESSION sql_mode = '', time_zone = '+05:30'",
		fmt.Sprint("INSERT INTO t VALUES ",
			"(1, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615, 2155, ",
			"999999999.999, 99999999999999999999999999999999999.999999999999999999999999999999, 3.4028234e38, 1.7976931348623157e308, ",
			"'ü😀', '日本語😀', 'café', REPEAT('t', 300), X'00FF', 'ab', X'000102', '9999-12-31', '838:59:59.999999', '838:59:59', ",
			"'-838:59:59.999', '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59', '9999-12-31 23:59:59.99', ",
			"'2038-01-19 03:14:07.999999', '2038-01-19 03:14:07', '{\"k\": [1, \"ü\"]}', 'z', 'p,q,r', b'111111111111', ",
			"18446744073709551615, 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'abcde'), ",
			"(2, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, 1901, ",
			"-999999999.999, -99999999999999999999999999999999999.999999999999999999999999999999, -1.4e-45, -5e-324, ",
			"'', '', '', '', '', '', '', '1000-01-01', '-838:59:59.999999', '-838:59:59', '-00:00:00.5', ",
			"'1000-01-01 00:00:00', '1000-01-01 00:00:00', '0099-01-01 00:00:00.01', '1970-01-01 05:30:01', '1970-01-01 05:30:01', ",
			"'[]', 'x', '', b'0', 0, '00000000-0000-0000-0000-000000000000', '::', ''), ",
			"(3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'a', 'a', 'a', 'a', 'a', 'a', 'a', ",
			"'0000-00-00', '00:00:00', '00:00:00', '-00:00:01.5', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '2024-02-00 00:00:00', ",
			"'0000-00-00 00:00:00', '0000-00-00 00:00:00', 'null', '', '', b'1', 1, '12345678-9abc-def0-1234-56789abcdef0', '::ffff:1.2.3.4', 'a'), ",
			"(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ",
			"NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"),
		"INSERT INTO t SELECT 10 + seq, seq % 128, seq % 256, -CAST(seq AS SIGNED), seq, -7 * CAST(seq AS SIGNED), seq, -7 * CAST(seq AS SIGNED), seq, -7 * CAST(seq AS SIGNED), "+
			"18446744073709551615 - seq, 1901 + seq % 255, seq / 7, seq / 7, seq / 3, seq / 3, CONCAT('c', seq), CONCAT('v', seq), "+
			"CONCAT('é', seq), REPEAT('t', seq % 40), UNHEX(HEX(seq)), CHAR(seq % 256), REPEAT(CHAR(seq % 256), 3), "+
			"'2024-01-01' + INTERVAL seq DAY, SEC_TO_TIME(seq * 997) + INTERVAL seq MICROSECOND, SEC_TO_TIME(-seq * 13), "+
			"SEC_TO_TIME(seq) + INTERVAL seq * 1000 MICROSECOND, '2024-01-01 00:00:00' + INTERVAL seq SECOND + INTERVAL seq MICROSECOND, "+
			"'2024-01-01 00:00:00' + INTERVAL seq MINUTE, '2024-01-01 00:00:00' + INTERVAL seq * 10000 MICROSECOND, "+
			"FROM_UNIXTIME(1700000000 + seq + seq / 1000000), FROM_UNIXTIME(1700000000 + seq), JSON_OBJECT('n', seq), "+
			"1 + seq % 3, seq % 8, seq % 4096, seq * 1000003, UUID(), INET6_NTOA(UNHEX(LPAD(HEX(seq), 32, '0'))), "+
			"IF(seq % 2, NULL, '') FROM seq_1_to_500")
	tbl, err := chunkread.NewTable("d", "t", familiesColumns, []string{"id"}, "PRIMARY")
	require.NoError(t, err)
	for _, mode := range []chunkread.Mode{chunkread.Snapshot, chunkread.Watermark, chunkread.Plain} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			bin, err := chunkread.New(s.Conn(t, mariadb.RootUser), mode)
			require.NoError(t, err)
			text, err := chunkread.New(s.Conn(t, mariadb.RootUser), mode)
			require.NoError(t, err)
			text.UseText()
			for _, rg := range []chunkread.Range{{}, {After: []any{int64(2)}, Through: []any{int64(300)}}, {After: []any{int64(400)}, Limit: 7}} {
				want, err := text.Read(tbl, rg)
				require.NoError(t, err)
				got, err := bin.Read(tbl, rg)
				require.NoError(t, err)
				require.NotEmpty(t, want.Rows)
				require.Equal(t, len(want.Rows), len(got.Rows))
				for i := range want.Rows {
					for j, c := range familiesColumns {
						require.Equal(t, want.Rows[i][j], got.Rows[i][j], "row %v, column %s", want.Rows[i][0], c.Name)
					}
				}
				require.Equal(t, want.At, got.At)
			}
			// The default reader executed prepared statements; the text one did not.
			execs := func(r *chunkread.Reader) string {
				rs, err := r.Conn().Execute("SHOW SESSION STATUS LIKE 'Com_stmt_execute'")
				require.NoError(t, err)
				v, err := rs.GetString(0, 1)
				require.NoError(t, err)
				return v
			}
			require.Equal(t, "3", execs(bin))
			require.Equal(t, "0", execs(text))
		})
	}

	// A few values in the forms the binlog decoder gives, so that the
	// comparison above is not of two equal mistakes.
	r, err := chunkread.New(s.Conn(t, mariadb.RootUser), chunkread.Plain)
	require.NoError(t, err)
	c, err := r.Read(tbl, chunkread.Range{Through: []any{int64(4)}})
	require.NoError(t, err)
	col := func(row int, name string) any { return c.Rows[row][schema.ColumnIndex(familiesColumns, name)] }
	require.Equal(t, uint64(18446744073709551615), col(0, "bu"))
	require.Equal(t, int64(-9223372036854775808), col(1, "bi"))
	require.Equal(t, float32(3.4028234e38), col(0, "f"))
	require.Equal(t, "-838:59:59.999", col(0, "t3"))
	require.Equal(t, "-00:00:00.500", col(1, "t3"))
	require.Equal(t, "838:59:59.999999", col(0, "tm"))
	require.Equal(t, "0099-01-01 00:00:00.01", col(1, "d2"))
	require.Equal(t, "1970-01-01 00:00:01.000000", col(1, "ts"), "TIMESTAMP in UTC")
	require.Equal(t, "0000-00-00 00:00:00.000000", col(2, "dtm"))
	require.Equal(t, "2024-02-00 00:00:00.00", col(2, "d2"))
	require.Equal(t, "0000-00-00", col(2, "dt"))
	require.Equal(t, []byte("ab\x00\x00"), col(0, "bn"), "BINARY padding")
	require.Equal(t, []byte("caf\xe9"), col(0, "l"), "latin1 bytes")
	require.Equal(t, int64(4095), col(0, "bt"))
	require.Equal(t, int64(3), col(0, "e"), "ENUM: the member's index, as the binlog holds it")
	require.Equal(t, int64(7), col(0, "st"), "SET: the members' bitmask")
	require.Nil(t, col(3, "dtm"))
}
