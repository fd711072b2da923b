package main

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// streamingLine is the replicator's "streaming" log line: where the
// stream starts, as a position and as the token.
var streamingLine = regexp.MustCompile(`(?m)^(?:time="[^"]*" )?level=info msg=streaming from="([^"]*)" snapshot=(true|false) token=(\S+)$`)

// streamingFrom is the from and token of the one "streaming" line of a
// run's stderr.
func streamingFrom(t *testing.T, stderr string) (from, snapshot, token string) {
	t.Helper()
	m := streamingLine.FindAllStringSubmatch(stderr, -1)
	require.Len(t, m, 1, "one streaming line in:\n%s", stderr)
	return m[0][1], m[0][2], m[0][3]
}

// TestStreamingLineNamesTheStart: the "streaming" line names where the
// stream starts, readably: the source's file:pos (file mode) or its GTID
// set (--gtid) at the first run, and the checkpoint's on a resume after
// the source moved on (where the run before stopped); its token is the
// checkpoint's token.
func TestStreamingLineNamesTheStart(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	src.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE a (id INT PRIMARY KEY, v INT)",
		"INSERT INTO a SELECT seq, seq FROM seq_1_to_100")
	for i, mode := range []string{"file", "gtid"} {
		t.Run(mode, func(t *testing.T) {
			tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
			r := &rig{src: src, tgt: tgt, args: []string{"--tables", "d.a"}}
			// current is where the source's binlog ends, as the line writes it.
			current := func() string {
				if mode == "gtid" {
					return "gtid " + src.GTIDBinlogPos(t)
				}
				file, pos := src.MasterStatus(t)
				return fmt.Sprintf("%s:%d", file, pos)
			}
			if mode == "gtid" {
				r.args = append(r.args, "--gtid")
			}
			checkpoint := func(saved bool) string {
				if !saved {
					return ""
				}
				return tgt.QueryValue(t, "SELECT token FROM binlogstream.checkpoint WHERE name = 'default'")
			}

			// Three runs, the source moving on before each resume: the
			// first starts at the source's end; each resume at the
			// checkpoint, where the run before stopped (the source's end
			// when that run began), not at the source's end now.
			var stoppedAt string
			for run := range 3 {
				if run > 0 {
					first := 1000*(3*i+run) + 1
					src.Exec(t, "USE d", fmt.Sprintf("INSERT INTO a SELECT seq, seq FROM seq_%d_to_%d", first, first+49))
				}
				now := current()
				saved := checkpoint(run > 0)
				res := r.run(t, "--stop-at-current")
				require.Equal(t, 0, res.code, res.stderr)
				from, snapshot, token := streamingFrom(t, res.stderr)
				t.Logf("run %d: %s (the source at %s)", run+1, streamingLine.FindString(res.stderr), now)
				assert.Equal(t, fmt.Sprint(run == 0), snapshot)
				if run == 0 {
					assert.Equal(t, now, from, "the first run starts at the source's end")
				} else {
					assert.Equal(t, saved, token, "the checkpoint's token")
					cp, err := binlogstream.ParseResumePosition(saved)
					require.NoError(t, err)
					if mode == "gtid" {
						assert.Equal(t, "gtid "+cp.Executed, from)
					} else {
						assert.Equal(t, cp.Streamed.String(), from)
					}
					assert.Equal(t, stoppedAt, from, "where the run before stopped")
					assert.NotEqual(t, now, from, "not the source's end")
				}
				stoppedAt = now
			}
			assert.Equal(t, dump(t, src, "d.a", "id"), dump(t, tgt, "d.a", "id"))
		})
	}
}
