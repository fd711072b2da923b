package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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

// docTablesMessages are the messages docs/filtering.md's "--tables in the
// commands" states: its code spans that hold "--tables ".
func docTablesMessages(t *testing.T) []string {
	b, err := os.ReadFile("../../docs/filtering.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "\n## --tables in the commands\n")
	require.True(t, ok, "docs/filtering.md has no --tables section")
	sec, _, _ = strings.Cut(sec, "\n## ")
	var out []string
	for _, m := range regexp.MustCompile("`([^`]*--tables [^`]*)`").FindAllStringSubmatch(sec, -1) {
		out = append(out, m[1])
	}
	require.Len(t, out, 3, "the refusal, the case refusal and the warning")
	return out
}

// TestTablesThatMatchNothing: on MariaDB (lower_case_table_names=0), a
// --tables pattern that names no table (app.nosuch) or names it in
// another case (APP.BIG) is refused with exit 1 and the message
// docs/filtering.md states, before anything is written; a backquoted
// name (`app`.`big`) selects the table; a wildcard over an existing
// database that matches nothing yet, and --tables-created-later, pass
// with the documented warning. Negative control: before the check, the
// first two exited 0 with only statement lines, and so did the
// backquoted one, which matched the table "`big`" of "`app`".
func TestTablesThatMatchNothing(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.big (id INT PRIMARY KEY)", "CREATE TABLE app.orders (id INT PRIMARY KEY)")
	file, pos := s.MasterStatus(t)
	s.Exec(t, "INSERT INTO app.big VALUES (1)", "INSERT INTO app.orders VALUES (1)", "CREATE DATABASE other")
	doc := docTablesMessages(t)
	refusal, caseRefusal, warning := doc[0], doc[1], doc[2]
	require.True(t, strings.HasPrefix(refusal, "binlog-tail: --tables app.nosuch "), refusal)

	run := func(tables ...string) (result, string) {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		args := append([]string{"--dsn", s.DSN(mariadb.ReplUser), "--out", out, "--start", fmt.Sprintf("%s:%d", file, pos),
			"--stop-at-current", "--server-id", "84"}, tables...)
		r := runBinary(t, context.Background(), args...)
		b, _ := os.ReadFile(out)
		return r, string(b)
	}
	for _, c := range []struct{ tables, stderr string }{
		{"app.nosuch", refusal + "\n"},
		{"APP.BIG", "binlog-tail: " + caseRefusal},
		{"`APP`.`BIG`", "but for case it matches app.big: this server compares names as written, lower_case_table_names=0"},
		{"app.big,app.nosuch", refusal},
	} {
		r, out := run("--tables", c.tables)
		assert.Equal(t, 1, r.code, "--tables %s: %s", c.tables, r.stderr)
		if strings.HasSuffix(c.stderr, "\n") {
			assert.Equal(t, c.stderr, r.stderr, "--tables %s", c.tables)
		} else {
			assert.Contains(t, r.stderr, strings.TrimPrefix(c.stderr, "binlog-tail: --tables app.nosuch"), "--tables %s", c.tables)
		}
		assert.Empty(t, out, "--tables %s: nothing written", c.tables)
	}

	r, out := run("--tables", "`app`.`big`")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, out, `{"type":"insert","schema":"app","table":"big","row":{"id":1}`)
	assert.NotContains(t, out, `"table":"orders"`)

	r, out = run("--tables", "app.audit_*")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, warning)
	assert.Contains(t, out, `"type":"query"`)

	r, _ = run("--tables", "app.later", "--tables-created-later")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--tables app.later matches no table yet")
	r, _ = run("--tables-created-later")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--tables-created-later needs --tables")
}

// TestTablesFoldedCase: on a server with lower_case_table_names=1,
// APP.BIG selects app.big, as the server compares names; the same run
// on a server with 0 is TestTablesThatMatchNothing's refusal.
func TestTablesFoldedCase(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{ExtraArgs: []string{"--lower-case-table-names=1"}})
	s.Exec(t, "CREATE DATABASE App", "CREATE TABLE App.Big (id INT PRIMARY KEY)", "CREATE TABLE App.orders (id INT PRIMARY KEY)")
	file, pos := s.MasterStatus(t)
	s.Exec(t, "INSERT INTO app.big VALUES (1)", "INSERT INTO app.orders VALUES (1)")
	out := filepath.Join(t.TempDir(), "out.jsonl")
	r := runBinary(t, context.Background(), "--dsn", s.DSN(mariadb.ReplUser), "--out", out, "--start", fmt.Sprintf("%s:%d", file, pos),
		"--stop-at-current", "--server-id", "85", "--tables", "APP.BIG")
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(b), `{"type":"insert","schema":"app","table":"big","row":{"id":1}`)
	assert.NotContains(t, string(b), `"table":"orders"`)
}
