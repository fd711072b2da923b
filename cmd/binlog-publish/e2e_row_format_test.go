package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// runPublisher runs binlog-publish to its end and returns its exit
// code and stderr.
func runPublisher(t *testing.T, args ...string) (int, string) {
	t.Helper()
	p := startPublisher(t, args...)
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		p.kill()
		t.Fatalf("binlog-publish still running after 2 minutes: %s", p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode(), p.stderr.String()
}

// TestPublishStopsAtStatementLogging: a server logging MIXED is refused
// before anything is published; on a ROW server, a session's UPDATE
// logged as a statement stops binlog-publish before it with exit 1, the
// stream holding exactly binlog-tail's lines up to there (binlog-tail
// stops at the same statement), and a restart refuses again and
// publishes nothing more.
func TestPublishStopsAtStatementLogging(t *testing.T) {
	s, c, js, start := setup(t)
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "F", "--start", start, "--quiet", "--stop-at-current"}

	s.Exec(t, "SET GLOBAL binlog_format=MIXED")
	code, stderr := runPublisher(t, args...)
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "has binlog_format=MIXED")
	assert.Contains(t, stderr, "SET GLOBAL binlog_format=ROW")
	s.Exec(t, "SET GLOBAL binlog_format=ROW")

	s.Exec(t, "INSERT INTO d.w VALUES (1, 1, 1, 'a'), (1, 2, 1, 'b')")
	s.Exec(t, "SET SESSION binlog_format=STATEMENT", "UPDATE d.w SET n = n + 1 WHERE k = 1")
	s.Exec(t, "INSERT INTO d.w VALUES (2, 1, 1, 'c')")

	code, stderr = runPublisher(t, args...)
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "a row change logged as a statement at mysql-bin.")
	assert.Contains(t, stderr, "UPDATE d.w SET n = n + 1 WHERE k = 1")
	got := natstest.Payloads(t, js, "F")

	out := filepath.Join(t.TempDir(), "ref.jsonl")
	b, err := exec.Command(tailBinary(t), "--dsn", s.DSN(mariadb.ReplUser), "--start", start, "--out", out,
		"--stop-at-current", "--server-id", "91", "--quiet").CombinedOutput()
	require.Error(t, err, "binlog-tail stops at the statement too: %s", b)
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Empty(t, natstest.Diff(want, got))
	assert.Contains(t, string(want), `"row":{"txn":1,"k":2,"n":1,"pad":"b"}`, "the rows before the statement are there")

	code, stderr = runPublisher(t, args...)
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "UPDATE d.w SET n = n + 1 WHERE k = 1")
	assert.Empty(t, natstest.Diff(want, natstest.Payloads(t, js, "F")), "a restart publishes nothing more and nothing twice")
}
