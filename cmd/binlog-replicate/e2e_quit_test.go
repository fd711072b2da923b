package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// abortedClients is the server's Aborted_clients counter.
func abortedClients(t *testing.T, s *mariadb.Server) string {
	return s.QueryValue(t, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'ABORTED_CLIENTS'")
}

// TestReplicateQuitsItsConnections: a run (a copy, then a verification
// once the copy is complete) ends its connections with COM_QUIT, so neither server counts an aborted
// client for them or logs an "Aborted connection" warning. The one left
// on the source is go-mysql's: closing a binlog dump opens a connection
// to KILL the dump thread and drops it. Closed without COM_QUIT, the
// target counted an aborted client for each of its connections.
func TestReplicateQuitsItsConnections(t *testing.T) {
	mariadb.Require(t)
	src := mariadb.Start(t, mariadb.Options{})
	tgt := mariadb.Start(t, mariadb.Options{ServerID: 2})
	verifySchema(t, src, 2000)
	r := &rig{src: src, tgt: tgt, args: []string{"--tables", verifyTables}}
	require.Equal(t, "0", abortedClients(t, src))
	require.Equal(t, "0", abortedClients(t, tgt))
	// A first run copies, then verifies once the snapshot is complete:
	// begun before, it would find the rows not copied yet missing.
	res := r.run(t, "--stop-at-current", "--verify")
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stderr, `"summary":true,"tables":4,"chunks":12,"rows":8000,"differences":0,`)
	res = r.run(t, "--verify-only")
	require.Equal(t, 0, res.code, res.stderr)

	require.Equal(t, "0", abortedClients(t, tgt))
	b, err := os.ReadFile(filepath.Join(src.Dir(), "error.log"))
	require.NoError(t, err)
	var aborted []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "Aborted connection") {
			aborted = append(aborted, l)
		}
	}
	require.LessOrEqual(t, len(aborted), 1, "aborted connections on the source:\n%s", strings.Join(aborted, "\n"))
}
