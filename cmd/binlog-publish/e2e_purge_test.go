package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestPublishPurgedBinlog: the binlog after the stream's last message
// was purged while no publisher ran. A restart, in file and in GTID mode,
// exits 1 with one line saying the server cannot send it and what to do,
// and the stream keeps exactly what it held.
func TestPublishPurgedBinlog(t *testing.T) {
	s, c, js, start := setup(t)
	for i, mode := range []struct {
		name, stream string
		args         []string
	}{
		{"file", "PF", []string{"--start", start}},
		{"gtid", "PG", []string{"--gtid", "--start"}}, // + the server's GTID position
	} {
		if mode.name == "gtid" {
			mode.args = append(mode.args, s.GTIDBinlogPos(t))
		}
		args := append([]string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", mode.stream, "--subject-prefix", mode.stream, "--quiet"},
			mode.args...)
		if i == 1 {
			// A second stream on the first one's subjects is refused
			// with what to do.
			cmd := exec.Command(th.Command(t, "binlog-publish"), "--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", "PX",
				"--subject-prefix", "PF", "--stop-at-current")
			out, err := cmd.CombinedOutput()
			require.Error(t, err)
			assert.Contains(t, string(out), "binlog-publish: stream PX: another stream holds subjects under PF.>: use that stream, or another --subject-prefix")
		}
		s.Exec(t, "USE d", "INSERT INTO w VALUES ("+strconv.Itoa(10*i+1)+", 1, 1, '"+mode.name+" before')")
		finish(t, args)
		before := natstest.Payloads(t, js, mode.stream)
		require.NotEmpty(t, before)

		s.Exec(t, "USE d", "INSERT INTO w VALUES ("+strconv.Itoa(10*i+2)+", 1, 1, '"+mode.name+" purged')")
		s.FlushBinaryLogs(t)
		file, _ := s.MasterStatus(t)
		s.PurgeBinaryLogsTo(t, file)
		s.Exec(t, "USE d", "INSERT INTO w VALUES ("+strconv.Itoa(10*i+3)+", 1, 1, '"+mode.name+" after')")

		cmd := exec.Command(th.Command(t, "binlog-publish"), append(args, "--stop-at-current")...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		assert.Equal(t, 1, ee.ExitCode(), "%s", out)
		msg := string(out)
		assert.Equal(t, 1, strings.Count(msg, "\n"), msg)
		assert.Contains(t, msg, "purged")
		assert.Contains(t, msg, "--start current (delete stream "+mode.stream+", or use another --stream and --subject-prefix)")
		assert.NotContains(t, msg, mariadb.ReplPassword)
		assert.Equal(t, before, natstest.Payloads(t, js, mode.stream), "the stream is left as it was")
		t.Logf("%s: %s", mode.name, strings.TrimSpace(msg))
	}
}
