package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
)

// TestGTIDFlags: the flag rules of --gtid and --failover-to, checked before
// any connection (bad flags exit 2).
func TestGTIDFlags(t *testing.T) {
	const dsn = "repl:hunter2@tcp(127.0.0.1:1)/"
	out := filepath.Join(t.TempDir(), "x.jsonl")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--failover-to", dsn}, "--failover-to needs --gtid"},
		{[]string{"--gtid", "--failover-to", "repl:hunter2@127.0.0.1"}, "--failover-to: "},
		{[]string{"--gtid", "--start", "mysql-bin.000001:4"}, "with --gtid want oldest, current or a GTID set"},
		{[]string{"--start", "0-1-5"}, "a GTID set needs --gtid"},
		{[]string{"--gtid", "--flavor", "mysql", "--start", "0-1-5"}, "GTID set"},
	} {
		var stderr bytes.Buffer
		code := cli(context.Background(), append([]string{"--dsn", dsn, "--out", out}, tc.args...), &bytes.Buffer{}, &stderr)
		assert.Equal(t, 2, code, "%v", tc.args)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		require.Len(t, lines, 2, "the cause, then the pointer to --help: %s", stderr.String())
		assert.Equal(t, "Run 'binlog-tail --help' for the flags.", lines[1])
		assert.Contains(t, lines[0], tc.msg, "%v", tc.args)
		assert.NotContains(t, stderr.String(), "hunter2")
	}
	o, err := parseFlags([]string{"--dsn", dsn, "--out", out, "--gtid", "--start", "0-1-5,1-2-3",
		"--failover-to", "a:pa@tcp(h1:3307)/", "--failover-to", "b:pb@tcp(h2)/"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Len(t, o.FailoverTo, 2, "repeatable, in order")
	assert.Equal(t, binlogstream.DSN{User: "a", Password: "pa", Host: "h1", Port: 3307}, o.FailoverTo[0])
	assert.Equal(t, uint16(3306), o.FailoverTo[1].Port)
}

// TestPasswordSources: a DSN's own password wins, then --password-file
// (mode checked), then MYSQL_PWD; --failover-to DSNs get the same.
func TestPasswordSources(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.jsonl")
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), mode))
		require.NoError(t, os.Chmod(p, mode)) // whatever the umask
		return p
	}
	good := file("pw", "Fr0m-File\nignored second line\n", 0o600)
	t.Setenv("MYSQL_PWD", "Fr0m-Env")
	parse := func(args ...string) (options, error) {
		return parseFlags(append([]string{"--out", out, "--gtid"}, args...), &bytes.Buffer{})
	}
	o, err := parse("--dsn", "a@tcp(h1)/", "--failover-to", "b@tcp(h2)/", "--failover-to", "c:own@tcp(h3)/")
	require.NoError(t, err)
	assert.Equal(t, []string{"Fr0m-Env", "Fr0m-Env", "own"}, []string{o.DSN.Password, o.FailoverTo[0].Password, o.FailoverTo[1].Password})
	o, err = parse("--dsn", "a@tcp(h1)/", "--failover-to", "b@tcp(h2)/", "--password-file", good)
	require.NoError(t, err)
	assert.Equal(t, []string{"Fr0m-File", "Fr0m-File"}, []string{o.DSN.Password, o.FailoverTo[0].Password})
	o, err = parse("--dsn", "a:own@tcp(h1)/", "--password-file", file("crlf", "Cr-Lf\r\n", 0o400))
	require.NoError(t, err)
	assert.Equal(t, "own", o.DSN.Password)

	for _, tc := range []struct{ path, msg string }{
		{file("open", "Gr0up-Read\n", 0o640), "mode 0640 gives group or others access; run chmod 600"},
		{file("empty", "\n", 0o600), "the first line is empty"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		var stderr bytes.Buffer
		code := cli(context.Background(), []string{"--dsn", "a@tcp(h1)/", "--out", out, "--password-file", tc.path}, &bytes.Buffer{}, &stderr)
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr.String(), "--password-file")
		assert.Contains(t, stderr.String(), tc.msg)
		assert.NotContains(t, stderr.String(), "Gr0up-Read")
	}
}

// TestGTIDModeMismatch: a file whose last token is of the other mode is
// refused before connecting, with the way out in the message.
func TestGTIDModeMismatch(t *testing.T) {
	dir := t.TempDir()
	gtidTok, err := binlogstream.StartAtGTID("mariadb", "0-1-5")
	require.NoError(t, err)
	fileTok := binlogstream.StartAt(binlogstream.Position{File: "mysql-bin.000001", Offset: 4})
	for _, tc := range []struct {
		tok  binlogstream.ResumePosition
		gtid bool
		msg  string
	}{
		{gtidTok, false, "was written in GTID mode"},
		{fileTok, true, "was written in file-position mode"},
	} {
		out := filepath.Join(dir, "out.jsonl")
		line := `{"type":"query","schema":"d","query":"x","file":"f","pos":4,"resume":"` + tc.tok.String() + "\"}\n"
		require.NoError(t, os.WriteFile(out, []byte(line), 0o644))
		args := []string{"--dsn", "repl:pw@tcp(127.0.0.1:1)/", "--out", out}
		if tc.gtid {
			args = append(args, "--gtid")
		}
		var stderr bytes.Buffer
		assert.Equal(t, 1, cli(context.Background(), args, &bytes.Buffer{}, &stderr))
		assert.Contains(t, stderr.String(), tc.msg)
		assert.NotContains(t, stderr.String(), "connect", "refused before connecting")
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, line, string(got), "the file is left alone")
	}
}

func TestDescribePosition(t *testing.T) {
	p, err := binlogstream.StartAtGTID("mariadb", "")
	require.NoError(t, err)
	assert.Equal(t, "gtid (none)", clikit.Describe(p))
	p.Executed, p.GTID = "0-1-5", "0-1-6"
	assert.Equal(t, "gtid 0-1-5 + inside 0-1-6", clikit.Describe(p))
	assert.Equal(t, "f.000001:4", clikit.Describe(binlogstream.StartAt(binlogstream.Position{File: "f.000001", Offset: 4})))
}
