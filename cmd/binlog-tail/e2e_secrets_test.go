package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndSecretsAndLock: passwords come from MYSQL_PWD or
// --password-file and appear in no output of a run that fails auth, one
// that streams, and one that fails over; the output file is 0600; a second
// binlog-tail on the same file is refused at once; a SIGKILLed one's lock
// does not block the rerun.
func TestEndToEndSecretsAndLock(t *testing.T) {
	mariadb.Require(t)
	bin := binary(t)
	const pw, wrong = "Qv7-distinct-PW-93k", "Wr0ng-distinct-PW-51x"
	p := mariadb.StartPair(t, mariadb.Options{})
	for _, s := range []*mariadb.Server{p.Primary, p.Replica} {
		s.Exec(t, "SET SESSION sql_log_bin = 0", "CREATE USER 'sec'@'%' IDENTIFIED BY '"+pw+"'",
			"GRANT REPLICATION SLAVE, BINLOG MONITOR, SLAVE MONITOR, SELECT ON *.* TO 'sec'@'%'")
	}
	p.Primary.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(50))",
		"INSERT INTO d.t VALUES (1, 'one'), (2, 'two')")
	p.WaitReplicaCaughtUp(t)
	primary, replica := "sec@tcp("+p.Primary.Addr()+")/", "sec@tcp("+p.Replica.Addr()+")/"
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pwFile, []byte(pw+"\n"), 0o600))

	var outputs []string // every stdout and stderr
	command := func(env string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "MYSQL_PWD="+env) // "" when the file gives it
		return cmd
	}
	run := func(env string, args ...string) (int, string) {
		t.Helper()
		cmd := command(env, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		outputs = append(outputs, stdout.String(), stderr.String())
		return cmd.ProcessState.ExitCode(), stderr.String()
	}

	// Authentication fails.
	out1 := filepath.Join(dir, "auth.jsonl")
	code, stderr := run(wrong, "--dsn", primary, "--out", out1)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "Access denied for user 'sec'")
	assert.Contains(t, stderr, "connect to sec:xxxxx@tcp("+p.Primary.Addr()+")/")

	// Streams, the password from the file.
	out2 := filepath.Join(dir, "stream.jsonl")
	code, stderr = run("", "--dsn", primary, "--password-file", pwFile, "--out", out2, "--start", "oldest", "--stop-at-current")
	require.Equal(t, 0, code, stderr)
	st, err := os.Stat(out2)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm()&^umask(), "the output file holds row data")
	assert.Zero(t, st.Mode().Perm()&0o077)

	// Fails over, the passwords from MYSQL_PWD; a second writer on the same
	// file is refused meanwhile.
	out3 := filepath.Join(dir, "failover.jsonl")
	a := command(pw, "--dsn", primary, "--gtid", "--start", "oldest", "--failover-to", replica, "--out", out3, "--server-id", "95")
	var aOut, aErr bytes.Buffer
	a.Stdout, a.Stderr = &aOut, &aErr
	require.NoError(t, a.Start())
	exited := make(chan error, 1)
	go func() { exited <- a.Wait() }()
	defer func() { _ = a.Process.Kill() }()
	before := waitFile(t, out3, exited, "the rows", func(b []byte) bool { return bytes.Count(b, []byte("\n")) == 5 })

	began := time.Now()
	code, stderr = run(pw, "--dsn", primary, "--gtid", "--out", out3, "--server-id", "96")
	assert.Equal(t, 1, code)
	assert.Less(t, time.Since(began), 2*time.Second, "refused at once")
	assert.Contains(t, stderr, out3+" is in use by another binlog-tail")
	now, err := os.ReadFile(out3)
	require.NoError(t, err)
	assert.Equal(t, before, now, "the refused run left the file alone")

	p.Primary.Kill()
	p.Promote(t)
	p.Replica.Exec(t, "INSERT INTO d.t VALUES (3, 'after failover')")
	waitFile(t, out3, exited, "the new primary's row", func(b []byte) bool { return bytes.Contains(b, []byte("after failover")) })
	require.NoError(t, a.Process.Signal(syscall.SIGKILL))
	<-exited
	outputs = append(outputs, aOut.String(), aErr.String())
	assert.Contains(t, aErr.String(), "failing over to a validated writer")

	// The killed process's lock is gone with it.
	code, stderr = run(pw, "--dsn", replica, "--gtid", "--out", out3, "--stop-at-current", "--server-id", "97")
	require.Equal(t, 0, code, stderr)

	for _, f := range []string{out1, out2, out3} {
		b, _ := os.ReadFile(f)
		outputs = append(outputs, string(b))
	}
	all := strings.Join(outputs, "\n")
	assert.Contains(t, all, "after failover", "the outputs were collected")
	for _, secret := range []string{pw, wrong} {
		assert.NotContains(t, all, secret)
	}
	t.Logf("%d outputs, %d bytes: neither password in any", len(outputs), len(all))
}

// umask reads the process umask (by setting it and back).
func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}
