package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndDDLKills: binlog-tail SIGKILLed at random across a workload
// of DDL between bulk writes (columns added, dropped, moved, renamed,
// tables renamed and swapped, dropped and recreated, truncated) on MariaDB
// 10.11's default binlog_row_metadata=NO_LOG, where every name comes from
// the schema history kept next to the output: the output equals an
// uninterrupted run's, and every row is keyed by the names its values
// were written under.
func TestEndToEndDDLKills(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024, MaxBinlogSize: 1 << 20})
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE a (id INT PRIMARY KEY, x VARCHAR(20))", "CREATE TABLE b (id INT PRIMARY KEY, y BIGINT)")
	bulk := func(table, cols, vals string, n int) string {
		return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM seq_%d_to_%d", table, cols, vals, n*10000+1, n*10000+3000)
	}
	s.Exec(t, "USE d",
		bulk("a", "id, x", "seq, CONCAT('x:', seq)", 1), bulk("b", "id, y", "seq, seq", 1),
		"ALTER TABLE a ADD COLUMN z INT FIRST",
		bulk("a", "id, x, z", "seq, CONCAT('x:', seq), seq", 2),
		"ALTER TABLE a CHANGE x w VARCHAR(20) AFTER z, ADD COLUMN v VARCHAR(5) AFTER id",
		bulk("a", "id, w, v", "seq, CONCAT('w:', seq), 'v'", 3),
		"UPDATE a SET v = 'u' WHERE id % 7 = 0",
		"RENAME TABLE a TO tmp, b TO a, tmp TO b",
		bulk("a", "id, y", "seq, seq", 4), bulk("b", "id, w", "seq, CONCAT('w:', seq)", 4),
		"ALTER TABLE b DROP COLUMN z, MODIFY v VARCHAR(10) FIRST",
		"DELETE FROM b WHERE id % 3 = 0",
		"TRUNCATE TABLE a",
		bulk("a", "id, y", "seq, seq", 5),
		"DROP TABLE a",
		"CREATE TABLE a (k VARCHAR(9) PRIMARY KEY, n INT UNSIGNED)",
		bulk("a", "k, n", "CONCAT('k', seq), seq", 6),
		"ALTER TABLE a RENAME TO c",
		bulk("c", "k, n", "CONCAT('k', seq), seq", 7),
		// MariaDB's own: implicit system versioning (row_start, row_end
		// end every row image), UUID, POINT, a COMPRESSED column, a JSON
		// column CONVERT TO turns latin1.
		"CREATE TABLE e (id INT PRIMARY KEY, u UUID, g POINT, t TEXT COMPRESSED, j JSON) WITH SYSTEM VERSIONING",
		bulk("e", "id, u, g, t, j", "seq, UUID(), POINT(seq, seq), REPEAT('é', 50 + seq % 7), JSON_OBJECT('n', seq, 'é', 1)", 8),
		"UPDATE e SET t = 'short' WHERE id % 5 = 0",
		"SET SESSION system_versioning_alter_history = KEEP",
		"ALTER TABLE e CONVERT TO CHARACTER SET latin1, ADD COLUMN s INT AFTER id",
		bulk("e", "id, s, u, g, t, j", "seq, seq, UUID(), POINT(seq, seq), REPEAT('é', 50), JSON_OBJECT('n', seq, 'é', 2)", 9),
	)
	// the server's own column order at the end agrees with the last table lines
	assert.Equal(t, "v,w,id", s.QueryValue(t, "SELECT GROUP_CONCAT(COLUMN_NAME ORDER BY ORDINAL_POSITION) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='d' AND TABLE_NAME='b'"))
	dsn := s.DSN(mariadb.ReplUser)
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"--dsn", dsn, "--out", out, "--start", "oldest", "--stop-at-current", "--server-id", "81", "--quiet"}
	}
	ref := filepath.Join(dir, "ref.jsonl")
	r := runBinary(t, context.Background(), args(ref)...)
	require.Equal(t, 0, r.code, r.stderr)
	want, err := os.ReadFile(ref)
	require.NoError(t, err)
	text := string(want)
	assert.NotContains(t, text, `"positional":true`, "every table is known: created in the binlog, or in the snapshot")
	for _, sub := range []string{
		`"table":"a","row":{"z":20001,"id":20001,"x":"x:20001"}`,
		`"table":"a","row":{"z":null,"w":"w:30001","id":30001,"v":"v"}`,
		`"table":"b","row":{"z":null,"w":"w:40001","id":40001,"v":null}`,
		`"type":"delete","schema":"d","table":"b","row":{"v":null,"w":"w:40002","id":40002}`,
		`"table":"a","row":{"id":40001,"y":40001}`,
		`"table":"c","row":{"k":"k70001","n":70001}`,
		`"table":"e","row":{"id":80005,"u":"`,
		`"t":"short","j":"{\"n\": 80005, \"é\": 1}","row_start":"`,
		`"table":"e","row":{"id":90001,"s":90001,"u":"`,
		`"t":"` + strings.Repeat("é", 50) + `","j":"{\"n\": 90001, \"é\": 2}","row_start":"`,
	} {
		assert.True(t, strings.Contains(text, sub), "%s not in the reference", sub)
		if !strings.Contains(text, sub) {
			pre := sub[:strings.Index(sub, `"row":`)+6]
			if i := strings.Index(text, pre); i >= 0 {
				t.Logf("first line with %s: %.300s", pre, text[i:])
			}
		}
	}
	t.Logf("reference: %d lines, %d bytes", bytes.Count(want, []byte("\n")), len(want))
	killAtRandom(t, want, filepath.Join(dir, "killed.jsonl"), 15, args)
	require.False(t, strings.Contains(text, `"unknown"`))
}
