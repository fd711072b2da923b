package main

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	th "github.com/binlogstream/binlogstream/testhelpers"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
	natstest "github.com/binlogstream/binlogstream/testhelpers/nats"
)

// TestProgressLineShown: binlog-publish writes its progress line to
// stderr while it runs, as the README says (msg=progress at=FILE:POS
// rows=N ..., the snapshot's reads while one runs), and --quiet hides it.
func TestProgressLineShown(t *testing.T) {
	mariadb.Require(t)
	if testing.Short() {
		t.Skip("starts MariaDB and a 3-node NATS cluster")
	}
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d",
		"CREATE TABLE a (id INT PRIMARY KEY, pad VARCHAR(40))", "CREATE TABLE b (id INT PRIMARY KEY, pad VARCHAR(40))",
		"INSERT INTO a SELECT seq, 'x' FROM seq_1_to_20000", "INSERT INTO b SELECT seq, 'y' FROM seq_1_to_5000")
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
	t.Logf("%d progress lines, the first: %s", strings.Count(out, "msg=progress"), line.FindString(out))

	require.Empty(t, run("P2", "--quiet", "--subject-prefix", "Q"), "--quiet")
}
