package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// envLine is an envelope line of --format debezium.
type envLine struct {
	Topic  string          `json:"topic"`
	Key    json.RawMessage `json:"key"`
	Value  json.RawMessage `json:"value"`
	Skip   int             `json:"skip"`
	Resume string          `json:"resume"`
}

type dbzValue struct {
	Op     string                     `json:"op"`
	Before map[string]json.RawMessage `json:"before"`
	After  map[string]json.RawMessage `json:"after"`
	DDL    *string                    `json:"ddl"`
	Source struct {
		Snapshot string `json:"snapshot"`
		File     string `json:"file"`
		Pos      int64  `json:"pos"`
		Row      int    `json:"row"`
	} `json:"source"`
}

func parseEnvelopes(t *testing.T, out []byte) []envLine {
	t.Helper()
	var ls []envLine
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if l == "" {
			continue
		}
		var e envLine
		require.NoError(t, json.Unmarshal([]byte(l), &e), l)
		require.True(t, strings.HasPrefix(l, `{"topic":`), l)
		ls = append(ls, e)
	}
	return ls
}

func value(t *testing.T, e envLine) *dbzValue {
	if string(e.Value) == "null" || e.Value == nil {
		return nil
	}
	var v dbzValue
	require.NoError(t, json.Unmarshal(e.Value, &v))
	return &v
}

// fold applies the change events of topic to a table keyed by the key's
// JSON: reads, creates and updates set the row, deletes remove it;
// pkChangeAsUpdate folds a primary-key change (a delete and a create of
// the same row change) as an update of the new key, as a consumer that
// took it for one would (the negative control).
func fold(t *testing.T, ls []envLine, topic string, pkChangeAsUpdate bool) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for i, e := range ls {
		v := value(t, e)
		if e.Topic != topic || v == nil {
			continue
		}
		switch v.Op {
		case "r", "c", "u":
			rows[string(e.Key)] = rowText(v.After)
		case "d":
			if pkChangeAsUpdate && i+2 < len(ls) {
				if n := value(t, ls[i+2]); n != nil && n.Op == "c" && n.Source.Pos == v.Source.Pos && n.Source.Row == v.Source.Row {
					continue // the create that follows "updates" the new key
				}
			}
			delete(rows, string(e.Key))
		default:
			t.Fatalf("op %q", v.Op)
		}
	}
	return rows
}

func rowText(r map[string]json.RawMessage) string {
	get := func(k string) string {
		v, ok := r[k]
		if !ok || string(v) == "null" {
			return "<null>"
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return string(v)
	}
	return strings.Join([]string{get("id"), get("v"), get("amount"), get("extra")}, "|")
}

// tableRows is what SELECT finds in d.t, as fold writes it.
func tableRows(t *testing.T, s *mariadb.Server) map[string]string {
	rows := map[string]string{}
	for _, r := range s.Query(t, "SELECT id, IFNULL(v, '<null>'), IFNULL(amount, '<null>'), IFNULL(extra, '<null>') FROM d.t") {
		rows[fmt.Sprintf(`{"id":%s}`, r[0])] = strings.Join(r, "|")
	}
	return rows
}

// TestEndToEndDebezium: --format debezium on a live MariaDB, a snapshot
// of a table and then a workload of inserts, updates, primary-key
// changes, deletes and DDL; binlog-tail is SIGKILLed at random moments in
// both phases and the file ends as an uninterrupted run's; the fold of
// the change events by key equals the table.
func TestEndToEndDebezium(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024})
	const snapRows = 3000
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(100), amount DECIMAL(10,2))",
		fmt.Sprintf("INSERT INTO t SELECT seq, CONCAT('s', seq), seq / 4 FROM seq_1_to_%d", snapRows))
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"--dsn", s.DSN(mariadb.ReplUser), "--out", out, "--start", "current", "--stop-at-current",
			"--snapshot", "--format", "debezium", "--decimal-handling", "string", "--topic-prefix", "srv", "--server-id", "85", "--quiet"}
	}
	ref, killed := filepath.Join(dir, "ref.jsonl"), filepath.Join(dir, "killed.jsonl")

	// Phase 1: the snapshot.
	r := runBinary(t, context.Background(), args(ref)...)
	require.Equal(t, 0, r.code, r.stderr)
	want, err := os.ReadFile(ref)
	require.NoError(t, err)
	ls := parseEnvelopes(t, want)
	require.Len(t, ls, snapRows)
	marks := map[string]int{}
	for _, e := range ls {
		v := value(t, e)
		require.Equal(t, "r", v.Op)
		marks[v.Source.Snapshot]++
	}
	assert.Equal(t, map[string]int{"first": 1, "true": snapRows - 2, "last": 1}, marks)
	assert.Equal(t, "first", value(t, ls[0]).Source.Snapshot)
	assert.Equal(t, "last", value(t, ls[len(ls)-1]).Source.Snapshot)
	assert.True(t, strings.HasPrefix(string(want), `{"topic":"srv.d.t","key":{"id":1},"value":{"before":null,"after":{"id":1,"v":"s1","amount":"0.25"},`+
		`"source":{"version":"binlogstream","connector":"mysql","name":"srv",`), "%.300s", want)
	killAtRandom(t, want, killed, 10, args)

	// Phase 2: a workload, streamed onto both files.
	s.Exec(t, "USE d",
		"INSERT INTO t SELECT seq, REPEAT('x', 30), seq / 100 FROM seq_5001_to_20000",
		"UPDATE t SET v = 'upd', amount = amount + 1 WHERE id % 3 = 0",
		"UPDATE t SET id = id + 100000 WHERE id % 7 = 0", // primary-key changes
		"DELETE FROM t WHERE id % 5 = 0",
		"ALTER TABLE t ADD COLUMN extra INT",
		"BEGIN", "INSERT INTO t (id, v, extra) VALUES (-1, 'neg', 1)", "UPDATE t SET id = -2, extra = 2 WHERE id = -1",
		"UPDATE t SET extra = 7 WHERE id = 1", "DELETE FROM t WHERE id = 2", "COMMIT",
		"CREATE USER u IDENTIFIED BY 'hunter2'",
	)
	r = runBinary(t, context.Background(), args(ref)...)
	require.Equal(t, 0, r.code, r.stderr)
	want, err = os.ReadFile(ref)
	require.NoError(t, err)
	require.NotContains(t, string(want), "hunter2", "the DDL's secret is masked")
	assert.Contains(t, string(want), `"ddl":"ALTER TABLE t ADD COLUMN extra INT"`)
	killAtRandom(t, want, killed, 15, args)

	ls = parseEnvelopes(t, want)
	ops := map[string]int{}
	skips := 0
	for i, e := range ls {
		if e.Skip > 0 {
			skips++
			require.Less(t, i+1, len(ls))
		}
		if v := value(t, e); v != nil && v.DDL == nil {
			ops[v.Op]++
		} else if v == nil {
			ops["tombstone"]++
		}
	}
	t.Logf("ops %v, %d lines with a skip", ops, skips)
	for _, op := range []string{"r", "c", "u", "d", "tombstone"} {
		assert.Positive(t, ops[op], op)
	}
	assert.Equal(t, ops["d"], ops["tombstone"], "a tombstone after each delete")

	table := tableRows(t, s)
	got := fold(t, ls, "srv.d.t", false)
	assert.Equal(t, len(table), len(got))
	assert.True(t, mapsEqual(table, got), "the fold of the change events equals the table")

	// Negative control: a primary-key change taken for an update leaves
	// the old keys in the fold.
	naive := fold(t, ls, "srv.d.t", true)
	assert.False(t, mapsEqual(table, naive), "a fold that reads a primary-key change as an update differs")
	t.Logf("table %d rows, fold %d, naive fold %d", len(table), len(got), len(naive))
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestDebeziumFormatRefusals: a file of one format is not resumed in the
// other; the Debezium flags need --format debezium.
func TestDebeziumFormatRefusals(t *testing.T) {
	dir := t.TempDir()
	lines := filepath.Join(dir, "lines.jsonl")
	require.NoError(t, os.WriteFile(lines, []byte(`{"type":"query","schema":"d","query":"CREATE DATABASE d","file":"f.000001","pos":100,"resume":"`+
		startToken(t)+`"}`+"\n"), 0o600))
	require.NoError(t, os.WriteFile(schemaPath(lines), nil, 0o600))
	dbz := filepath.Join(dir, "dbz.jsonl")
	require.NoError(t, os.WriteFile(dbz, []byte(`{"topic":"binlog","key":{"databaseName":"d"},"value":null,"resume":"`+startToken(t)+`"}`+"\n"), 0o600))
	require.NoError(t, os.WriteFile(schemaPath(dbz), nil, 0o600))
	for _, tc := range []struct {
		out, format, msg string
	}{
		{lines, "debezium", "was written with --format lines: run with --format lines to resume it, or use another --out"},
		{dbz, "lines", "was written with --format debezium: run with --format debezium to resume it, or use another --out"},
	} {
		before, _ := os.ReadFile(tc.out)
		var stderr bytes.Buffer
		code := cli(context.Background(), []string{"--dsn", "u:p@tcp(127.0.0.1:1)/", "--out", tc.out, "--format", tc.format}, &bytes.Buffer{}, &stderr)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr.String(), tc.msg)
		after, _ := os.ReadFile(tc.out)
		assert.Equal(t, before, after, "the file is left as it was")
	}
	o, err := parseFlags([]string{"--dsn", "u:p@tcp(127.0.0.1:1)/", "--out", filepath.Join(dir, "x")}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, formatFlags{Format: "lines", DecimalHandling: "precise", TopicPrefix: "binlog"}, o.formatFlags, "the defaults")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--schemas"}, "--schemas needs --format debezium"},
		{[]string{"--no-tombstones"}, "--no-tombstones needs --format debezium"},
		{[]string{"--decimal-handling", "string"}, "--decimal-handling needs --format debezium"},
		{[]string{"--topic-prefix", "x"}, "--topic-prefix needs --format debezium"},
		{[]string{"--format", "avro"}, `--format "avro": want lines or debezium`},
		{[]string{"--format", "debezium", "--decimal-handling", "exact"}, `--decimal-handling "exact": want precise, string or double`},
	} {
		var stderr bytes.Buffer
		code := cli(context.Background(), append([]string{"--dsn", "u:p@tcp(127.0.0.1:1)/", "--out", filepath.Join(dir, "x")}, tc.args...), &bytes.Buffer{}, &stderr)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, stderr.String(), tc.msg)
	}
}

func startToken(t *testing.T) string {
	b, err := binlogstreamStartAt("f.000001", 4).MarshalText()
	require.NoError(t, err)
	return string(b)
}

func binlogstreamStartAt(file string, pos uint64) binlogstream.ResumePosition {
	return binlogstream.StartAt(binlogstream.Position{File: file, Offset: pos})
}
