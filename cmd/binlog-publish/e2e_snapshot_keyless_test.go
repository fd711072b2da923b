package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestPublishSnapshotKeyless: binlog-publish --snapshot of every table of
// a database with two keyless tables exits 1 at start, naming both and
// the ways out, with no read published; --snapshot-keyless skip publishes
// the keyed tables' rows, warning once for each keyless one.
func TestPublishSnapshotKeyless(t *testing.T) {
	s, c, js, _ := setup(t)
	s.Exec(t, "USE d",
		"CREATE TABLE a_keyed (id INT PRIMARY KEY)",
		"CREATE TABLE b_nokey (v INT)",
		"CREATE TABLE d_nullable (v INT, UNIQUE KEY (v))",
		"INSERT INTO a_keyed SELECT seq FROM seq_1_to_25",
		"INSERT INTO b_nokey SELECT seq FROM seq_1_to_5",
		"INSERT INTO d_nullable SELECT seq FROM seq_1_to_5")
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "S", "--start", "current",
		"--stop-at-current", "--snapshot"}
	wait := func(p *publisher) error {
		t.Helper()
		select {
		case err := <-p.done:
			return err
		case <-time.After(time.Minute):
			p.kill()
			t.Fatalf("binlog-publish still running after a minute: %s", p.stderr.String())
			return nil
		}
	}
	reads := func() int {
		n := 0
		for _, p := range natstest.Payloads(t, js, "S") {
			if strings.HasPrefix(string(p), `{"type":"read"`) {
				n++
			}
		}
		return n
	}

	p := startPublisher(t, args...)
	require.Error(t, wait(p))
	assert.Equal(t, 1, p.cmd.ProcessState.ExitCode())
	msg := p.stderr.String()
	assert.Contains(t, msg, "binlog-publish: --snapshot: `d`.`b_nokey`, `d`.`d_nullable`: no primary key and no UNIQUE key of NOT NULL columns")
	assert.Contains(t, msg, "name the tables to read with --tables, leaving these out, or add --snapshot-keyless skip")
	if _, err := js.Stream(t.Context(), "S"); err == nil {
		assert.Zero(t, reads(), "no read published")
	}

	p = startPublisher(t, append(args, "--snapshot-keyless", "skip")...)
	require.NoError(t, wait(p), p.stderr.String())
	assert.Equal(t, 25, reads())
	for _, tbl := range []string{"d.b_nokey", "d.d_nullable"} {
		assert.Equal(t, 1, strings.Count(p.stderr.String(), "table="+tbl), p.stderr.String())
	}

	// What the README says is what the runs above showed.
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	assert.Contains(t, string(readme), "`refuse` (default) exits 1 at start, before any read is published, naming every such table "+
		"and the ways out (`--tables` leaving them out, or `skip`); `skip` publishes their changes but not their rows, with a warning naming each")
}
