package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestTablesThatMatchNothing: binlog-publish refuses, on a stream that
// holds no line, a --tables pattern that names no table (app.nosuch) or
// names it in another case (APP.BIG, lower_case_table_names=0), exit 1
// with the message docs/filtering.md states; a backquoted name
// (`app`.`big`) selects the table; a resumed stream is not checked
// again. Negative control: before the check all three exited 0, the
// backquoted one publishing no row of app.big.
func TestTablesThatMatchNothing(t *testing.T) {
	s, c, js, start := setup(t)
	s.Exec(t, "CREATE DATABASE app", "CREATE TABLE app.big (id INT PRIMARY KEY)", "CREATE TABLE app.orders (id INT PRIMARY KEY)",
		"INSERT INTO app.big VALUES (1)", "INSERT INTO app.orders VALUES (1)")
	b, err := os.ReadFile("../../docs/filtering.md")
	require.NoError(t, err)
	_, sec, _ := strings.Cut(string(b), "\n## --tables in the commands\n")
	doc := regexp.MustCompile("`([^`]*--tables [^`]*)`").FindAllStringSubmatch(sec, -1)
	require.GreaterOrEqual(t, len(doc), 2, "docs/filtering.md states the refusals")
	refusal := strings.Replace(doc[0][1], "binlog-tail: ", "binlog-publish: ", 1) + "\n"

	run := func(stream string, args ...string) (int, string) {
		cmd := exec.Command(th.Command(t, "binlog-publish"), append([]string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(),
			"--stream", stream, "--subject-prefix", strings.ToLower(stream), "--start", start, "--stop-at-current"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	code, stderr := run("NOSUCH", "--tables", "app.nosuch")
	assert.Equal(t, 1, code, stderr)
	assert.Equal(t, refusal, stderr)
	code, stderr = run("CASE", "--tables", "APP.BIG")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, doc[1][1])
	for _, stream := range []string{"NOSUCH", "CASE"} {
		st, err := js.Stream(context.Background(), stream)
		if err == nil {
			assert.Zero(t, st.CachedInfo().State.Msgs, "a refused run publishes nothing")
		}
	}

	code, stderr = run("QUOTED", "--tables", "`app`.`big`", "--quiet")
	require.Equal(t, 0, code, stderr)
	var rows int
	for _, p := range natstest.Payloads(t, js, "QUOTED") {
		assert.NotContains(t, string(p), `"table":"orders"`)
		if strings.Contains(string(p), `{"type":"insert","schema":"app","table":"big","row":{"id":1}`) {
			rows++
		}
	}
	assert.Equal(t, 1, rows, "app.big's row, once")

	// Resumed, the stream is not checked again: the table may be gone.
	s.Exec(t, "DROP TABLE app.big")
	code, stderr = run("QUOTED", "--tables", "`app`.`big`", "--quiet")
	assert.Equal(t, 0, code, stderr)
}
