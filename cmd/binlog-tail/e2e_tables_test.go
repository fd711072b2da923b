package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndTablesFilter: --tables d.orders on MariaDB while most of the
// binlog is another table's: the output's data lines are the orders and
// statement lines of an unfiltered run, byte for byte; the checkpoint
// ends past the trailing users traffic (a rerun reads none of it again);
// and SIGKILLs at random moments leave the same data lines.
func TestEndToEndTablesFilter(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{BinlogRowEventMaxSize: 1024})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE orders (id INT PRIMARY KEY, note VARCHAR(20), amount DECIMAL(10,2))",
		"CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(40))")
	for i := range 8 {
		s.Exec(t, "USE d",
			fmt.Sprintf("INSERT INTO orders SELECT seq, CONCAT('o', seq), seq / 4 FROM seq_%d_to_%d", i*500+1, i*500+500),
			fmt.Sprintf("INSERT INTO users SELECT seq, CONCAT('user-', seq) FROM seq_%d_to_%d", i*5000+1, i*5000+5000),
			"BEGIN", fmt.Sprintf("UPDATE users SET name = 'x' WHERE id %% 50 = %d", i),
			fmt.Sprintf("UPDATE orders SET amount = amount + 1 WHERE id %% 7 = %d", i), "COMMIT")
	}
	s.Exec(t, "USE d", "DELETE FROM orders WHERE id % 5 = 0")
	for i := range 200 { // trailing traffic on users only
		s.Exec(t, "USE d", fmt.Sprintf("UPDATE users SET name = 'y%d' WHERE id = %d", i, i+1))
	}
	dsn := s.DSN(mariadb.ReplUser)
	dir := t.TempDir()
	args := func(out string, more ...string) []string {
		return append([]string{"--dsn", dsn, "--out", out, "--start", "oldest", "--stop-at-current", "--server-id", "83", "--quiet"}, more...)
	}
	all := filepath.Join(dir, "all.jsonl")
	r := runBinary(t, context.Background(), args(all)...)
	require.Equal(t, 0, r.code, r.stderr)
	allOut, err := os.ReadFile(all)
	require.NoError(t, err)
	var want []string
	for _, l := range dataLines(allOut) {
		if strings.HasPrefix(l, `{"type":"query"`) || strings.Contains(l, `"table":"orders"`) {
			want = append(want, l)
		}
	}
	require.Greater(t, len(want), 4000, "the orders lines")

	ordersOut := filepath.Join(dir, "orders.jsonl")
	r = runBinary(t, context.Background(), args(ordersOut, "--tables", "d.orders")...)
	require.Equal(t, 0, r.code, r.stderr)
	got, err := os.ReadFile(ordersOut)
	require.NoError(t, err)
	require.Equal(t, want, dataLines(got))
	require.NotContains(t, string(got), `"table":"users"`)
	// The run stopped at the server's position: its checkpoint is there,
	// past the trailing users traffic, in a progress line.
	lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	f, p := s.MasterStatus(t)
	require.True(t, strings.HasPrefix(lines[len(lines)-1], `{"type":"progress"`), lines[len(lines)-1])
	require.Contains(t, lines[len(lines)-1], fmt.Sprintf(`"file":%q,"pos":%d,`, f, p))
	// Run again: at the end already, it reads nothing and writes nothing.
	r = runBinary(t, context.Background(), args(ordersOut, "--tables", "d.orders")...)
	require.Equal(t, 0, r.code, r.stderr)
	again, err := os.ReadFile(ordersOut)
	require.NoError(t, err)
	require.Equal(t, string(got), string(again))

	killAtRandomComparing(t, got, filepath.Join(dir, "killed.jsonl"), 10,
		func(out string) []string { return args(out, "--tables", "d.orders") },
		func(t *testing.T, want, got []byte) { require.Equal(t, dataLines(want), dataLines(got)) })
}
