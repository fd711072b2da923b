package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSourceFlags: --failover-to needs --gtid, the snapshot's knobs need
// --snapshot, and a DSN without a password takes --password-file's, a
// failover candidate's included; no error prints a password.
func TestSourceFlags(t *testing.T) {
	base := []string{"--dsn", "u@tcp(127.0.0.1:3306)/", "--nats", "nats://127.0.0.1:4222", "--stream", "S"}
	pw := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pw, []byte("s3cret\n"), 0o600))
	var stderr bytes.Buffer

	o, err := parseFlags(append(base, "--gtid", "--password-file", pw, "--failover-to", "v@tcp(127.0.0.2:3306)/",
		"--failover-to", "w:own@tcp(127.0.0.3:3306)/", "--snapshot", "--snapshot-readers", "2", "--snapshot-chunk-rows", "500"), &stderr)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", o.DSN.Password)
	require.Len(t, o.FailoverTo, 2)
	assert.Equal(t, "s3cret", o.FailoverTo[0].Password)
	assert.Equal(t, "own", o.FailoverTo[1].Password)
	assert.True(t, o.Snapshot)
	assert.Equal(t, uint(2), o.SnapshotReaders)
	assert.Equal(t, uint(500), o.SnapshotChunkRows)

	t.Setenv("MYSQL_PWD", "from-env")
	o, err = parseFlags(base, &stderr)
	require.NoError(t, err)
	assert.Equal(t, "from-env", o.DSN.Password)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--failover-to", "v:s3cret@tcp(127.0.0.2:3306)/"}, "--failover-to needs --gtid"},
		{[]string{"--gtid", "--failover-to", "v:s3cret@tcp(127.0.0.2:3306"}, "--failover-to:"},
		{[]string{"--snapshot-readers", "2"}, "need --snapshot"},
		{[]string{"--snapshot-chunk-rows", "10"}, "need --snapshot"},
		{[]string{"--password-file", filepath.Join(t.TempDir(), "missing")}, "--password-file:"},
	} {
		_, err := parseFlags(append(append([]string{}, base...), c.args...), &stderr)
		require.Error(t, err, "%v", c.args)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "s3cret")
	}
}
