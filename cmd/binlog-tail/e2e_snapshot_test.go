package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndSnapshot: --snapshot writes one read line per row the
// tables held, then streams; kill -9 at random moments (inside chunks
// included) and a rerun leave the file as an uninterrupted run does.
func TestEndToEndSnapshot(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024})
	const rows = 10000
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE s (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, amount DECIMAL(10,2))",
		"CREATE TABLE other (id INT PRIMARY KEY)",
		fmt.Sprintf("INSERT INTO s SELECT seq, CONCAT('n', seq), seq / 4 FROM seq_1_to_%d", rows),
		"INSERT INTO other VALUES (1)")
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"--dsn", s.DSN(mariadb.ReplUser), "--out", out, "--start", "current", "--stop-at-current",
			"--snapshot", "--tables", "d.s", "--server-id", "84", "--quiet"}
	}
	full := filepath.Join(dir, "full.jsonl")
	r := runBinary(t, context.Background(), args(full)...)
	require.Equal(t, 0, r.code, r.stderr)
	out, err := os.ReadFile(full)
	require.NoError(t, err)
	lines := dataLines(out)
	require.Len(t, lines, rows)
	var first struct {
		Type, Schema, Table string
		Row                 map[string]any
		Resume              string
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, "read", first.Type)
	require.Equal(t, map[string]any{"id": 1.0, "name": "n1", "amount": "0.25"}, first.Row)
	require.True(t, strings.HasPrefix(lines[0], `{"type":"read","schema":"d","table":"s","row":{"id":1,"name":"n1","amount":"0.25"},"file":`), lines[0])
	require.NotContains(t, string(out), `"table":"other"`)

	killAtRandomComparing(t, out, filepath.Join(dir, "killed.jsonl"), 20, args,
		func(t *testing.T, want, got []byte) { require.Equal(t, dataLines(want), dataLines(got)) })
}
