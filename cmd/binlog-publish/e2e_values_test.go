package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
	"github.com/binlogstream/binlogstream/testhelpers/valuecases"
)

// dataLines are the lines of b, or the payloads, without progress lines
// (their timing is the run's own).
func dataLines(lines [][]byte) [][]byte {
	var out [][]byte
	for _, l := range lines {
		if !bytes.HasPrefix(l, []byte(`{"type":"progress"`)) {
			out = append(out, l)
		}
	}
	return out
}

func splitLines(b []byte) [][]byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	return lines[:len(lines)-1]
}

// TestPublishValuesEqualTail: every type family of
// testhelpers/valuecases, inserted, updated and deleted, in each
// binlog_row_metadata mode: the stream holds binlog-tail's lines byte for
// byte (under NO_LOG the column names come from the schema history in
// JetStream). With --snapshot, the rows the tables held are read lines
// equal to binlog-tail --snapshot's, positions aside. The servers take
// messages of up to 8 MiB (max_payload).
func TestPublishValuesEqualTail(t *testing.T) {
	mariadb.Require(t)
	if testing.Short() {
		t.Skip("starts MariaDB servers and a 3-node NATS cluster")
	}
	// valuecases holds a 1 MiB MEDIUMBLOB, a line of about 1.4 MB.
	c := natstest.StartClusterMaxPayload(t, 3, 8<<20)
	js, err := jetstream.New(c.Connect(t))
	require.NoError(t, err)
	for _, meta := range []string{"NO_LOG", "MINIMAL", "FULL"} {
		t.Run(meta, func(t *testing.T) {
			s := mariadb.Start(t, mariadb.Options{ExtraArgs: []string{"--binlog-row-metadata=" + meta, "--max-allowed-packet=64M"}})
			createX, insertX := valuecases.TableSQL("x", valuecases.Exotic)
			s.Exec(t, append([]string{"CREATE DATABASE d", "USE d", "SET SESSION sql_mode = ''", createX}, insertX...)...)
			file, pos := s.MasterStatus(t)
			start := fmt.Sprintf("%s:%d", file, pos)
			createV, insertV := valuecases.TableSQL("v", valuecases.Columns)
			s.Exec(t, append(append([]string{"USE d", "SET SESSION sql_mode = ''", "SET SESSION time_zone = '+05:30'", createV}, insertV...),
				"UPDATE v SET id = id + 100", "UPDATE x SET id = id + 100", "DELETE FROM v WHERE id > 102", "DELETE FROM x WHERE id > 102")...)

			name := "V" + strings.ReplaceAll(meta, "_", "")
			finish(t, []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", name, "--subject-prefix", name,
				"--start", start, "--quiet"})
			want := tailOutput(t, "--dsn", s.DSN(mariadb.ReplUser), "--start", start)
			require.Empty(t, natstest.Diff(want, natstest.Payloads(t, js, name)))

			snap := name + "S"
			finish(t, []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", snap, "--subject-prefix", snap,
				"--start", "current", "--snapshot", "--tables", "d.*", "--quiet"})
			wantSnap := dataLines(splitLines(tailOutput(t, "--dsn", s.DSN(mariadb.ReplUser), "--start", "current", "--snapshot", "--tables", "d.*")))
			gotSnap := dataLines(natstest.Payloads(t, js, snap))
			require.Equal(t, withoutPositions(t, wantSnap), withoutPositions(t, gotSnap))
			reads := 0
			for _, l := range gotSnap {
				if bytes.HasPrefix(l, []byte(`{"type":"read"`)) {
					reads++
				}
			}
			require.Equal(t, s.QueryValue(t, "SELECT (SELECT COUNT(*) FROM d.v) + (SELECT COUNT(*) FROM d.x)"), fmt.Sprint(reads), "read lines")
			t.Logf("%s: %d lines equal to binlog-tail's; --snapshot: %d lines, %d of them reads", meta, bytes.Count(want, []byte("\n")), len(gotSnap), reads)
		})
	}
}

// TestPublishLineOverMaxPayload: a row whose line is over the NATS
// servers' max_payload (1 MiB by default) stops binlog-publish at once,
// exit 1, with one line naming the table and what to change, and the
// stream holds every line before it.
func TestPublishLineOverMaxPayload(t *testing.T) {
	s, c, js, start := setup(t)
	s.Exec(t, "USE d", "CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)", "INSERT INTO w VALUES (1, 0, 1, 'before')",
		"INSERT INTO big VALUES (1, REPEAT(x'00FF', 600000))", "INSERT INTO w VALUES (2, 0, 1, 'after')")
	args := []string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "B", "--start", start, "--quiet", "--stop-at-current"}
	began := time.Now()
	out, err := exec.Command(th.Command(t, "binlog-publish"), args...).CombinedOutput()
	took := time.Since(began)
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 1, ee.ExitCode())
	msg := string(out)
	assert.Equal(t, 1, strings.Count(msg, "\n"), msg)
	assert.True(t, strings.HasPrefix(msg, "binlog-publish: "), msg)
	assert.Contains(t, msg, "stream B: the line on binlog.d.big of ") // from the sender, or through the listener's error
	assert.Contains(t, msg, "raise max_payload in the nats-server configuration")
	assert.Less(t, took, 20*time.Second, "no retries: the message will not get smaller")
	want := splitLines(reference(t, s, start))
	got := natstest.Payloads(t, js, "B")
	require.Less(t, len(got), len(want))
	require.Equal(t, want[:len(got)], got, "the stream holds the lines before the large one")
	t.Logf("%s (after %v); the stream holds %d of %d lines", strings.TrimSpace(msg), took.Round(time.Millisecond), len(got), len(want))
}
