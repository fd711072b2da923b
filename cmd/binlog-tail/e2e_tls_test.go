package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndTLS: binlog-tail against a server that requires TLS, with
// the TLS settings in the DSN: its own queries (flavor, SHOW MASTER STATUS,
// SHOW BINARY LOGS, the GTID probe) and the dump all go over verified TLS;
// a plain DSN is refused with the hint.
func TestEndToEndTLS(t *testing.T) {
	mariadb.Require(t)
	dir := t.TempDir()
	certs := mariadb.MakeCerts(t, dir)
	s := mariadb.Start(t, mariadb.Options{ExtraArgs: certs.RequireTLSArgs()})
	s.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1), (2)")
	plain := fmt.Sprintf("%s:%s@tcp(%s)/", s.ReplUser(), s.ReplPassword(), s.Addr())
	dsn := plain + "?tls=true&tls-ca=" + certs.CA
	for _, mode := range [][]string{nil, {"--gtid"}} {
		out := filepath.Join(dir, fmt.Sprintf("out%d.jsonl", len(mode)))
		var stdout, stderr bytes.Buffer
		args := append([]string{"--dsn", dsn, "--out", out, "--start", "oldest", "--stop-at-current", "--quiet"}, mode...)
		require.Equal(t, 0, cli(context.Background(), args, &stdout, &stderr), stderr.String())
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, 5, bytes.Count(b, []byte("\n")), "two statements, a table line and two rows: %s", b)
	}
	var stderr bytes.Buffer
	code := cli(context.Background(), []string{"--dsn", plain, "--out", filepath.Join(dir, "plain.jsonl")}, &bytes.Buffer{}, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "Access denied")
	assert.Contains(t, stderr.String(), "the server accepts these credentials over TLS only (require_secure_transport): add tls=true to the DSN")
}
