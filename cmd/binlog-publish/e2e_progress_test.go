package main

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestProgressLineShown: binlog-publish writes its progress line to
// stderr while it runs, as the README says (msg=progress at=FILE:POS
// rows=N ...), with the snapshot's tables done, reads and, from the
// server's estimate of the tables' rows (information_schema.TABLES,
// settled here by ANALYZE TABLE), the rows left: read + left is the
// estimate on every line that shows them. --quiet hides the line.
func TestProgressLineShown(t *testing.T) {
	mariadb.Require(t)
	if testing.Short() {
		t.Skip("starts MariaDB and a 3-node NATS cluster")
	}
	s, est := mariadb.StartEstimated(t) // the estimate the command reads
	c := natstest.StartCluster(t, 3)
	run := func(stream string, more ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args := append([]string{"--dsn", s.DSN(mariadb.ReplUser), "--nats", c.URLs(), "--stream", stream, "--start", "current",
			"--stop-at-current", "--snapshot", "--tables", "d.*", "--snapshot-readers", "1", "--snapshot-chunk-rows", "100",
			"--progress-every", "20ms"}, more...)
		out, err := exec.CommandContext(ctx, th.Command(t, "binlog-publish"), args...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}

	out := run("P1")
	line := regexp.MustCompile(`(?m)^level=info msg=progress at="?mysql-bin\.\d+:\d+"? lag=\S+ rows=\d+ rows_per_s=\d+ snapshot_reads=\d+ `)
	require.Regexp(t, line, out)
	snap := regexp.MustCompile(`snapshot_reads=(\d+) snapshot_reads_per_s=\d+(?: snapshot_rows_left=(\d+))? snapshot_tables=2 snapshot_tables_done=[012]$`)
	var snapLines, withLeft int
	var last string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(l, "snapshot_reads=") {
			continue
		}
		m := snap.FindStringSubmatch(l)
		require.NotNil(t, m, "a snapshot progress line: %s", l)
		snapLines++
		last = l
		if m[2] != "" {
			read, _ := strconv.Atoi(m[1])
			left, _ := strconv.Atoi(m[2])
			if left > 0 {
				assert.Equal(t, est, read+left, "read + left is the estimate: %s", l)
			}
			withLeft++
		}
	}
	require.NotZero(t, withLeft, "a line with the rows left:\n%s", out)
	t.Logf("%d progress lines, %d with the rows left (estimate %d for 25000 rows); the last: %s", snapLines, withLeft, est, last)

	require.Empty(t, run("P2", "--quiet", "--subject-prefix", "Q"), "--quiet")
}
