package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/tailline"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestEndToEndStatementSecrets: account and server statements run on
// MariaDB with distinctive secrets reach the binlog with them in clear
// (the raw Query events the library delivers hold each one), and
// binlog-tail writes their query lines with every secret masked and the
// rest of each statement intact; no byte of its output holds a secret.
// One pair of users is created under NO_BACKSLASH_ESCAPES, where 'a\' is a
// whole string. FILE.schema, which stores the statements that read as DDL
// (CREATE/ALTER USER, CREATE SERVER), holds them masked too.
func TestEndToEndStatementSecrets(t *testing.T) {
	mariadb.Require(t)
	s := mariadb.Start(t, mariadb.Options{})
	// SET PASSWORD reaches the binlog with the password's hash in place of
	// PASSWORD('...'): the hash is the secret there.
	setHash := s.QueryValue(t, "SELECT PASSWORD('Sp3-set-secret')")
	asHash := s.QueryValue(t, "SELECT PASSWORD('Wa8-with-as-secret')")
	secrets := []string{"Cu1-create-secret", "Au2-alter-secret", "Sp3-set-secret", setHash, "Gr4-grant-secret",
		"Sv5-server-secret", `Nb6-backslash-secret\`, "Nb7-noescape-secret",
		"Ab9-alter-by-secret", asHash}
	s.Exec(t,
		"CREATE DATABASE d",
		"CREATE USER 'sx'@'%' IDENTIFIED BY 'Cu1-create-secret'",
		"ALTER USER 'sx'@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD('Au2-alter-secret')",
		"ALTER USER 'sx'@'%' IDENTIFIED BY 'Ab9-alter-by-secret'",
		"CREATE USER 'sw'@'%' IDENTIFIED WITH mysql_native_password AS '"+asHash+"'",
		"SET PASSWORD FOR 'sx'@'%' = PASSWORD('Sp3-set-secret')",
		"GRANT SELECT ON d.* TO 'sx'@'%' IDENTIFIED BY 'Gr4-grant-secret'",
		"CREATE SERVER srv FOREIGN DATA WRAPPER mysql OPTIONS (HOST '127.0.0.1', USER 'sx', PASSWORD 'Sv5-server-secret', DATABASE 'd')",
		"SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')",
		`CREATE USER 'sy'@'%' IDENTIFIED BY 'Nb6-backslash-secret\', 'sz'@'%' IDENTIFIED BY 'Nb7-noescape-secret'`,
	)
	const m = binlogstream.SecretMask
	want := []string{ // the query lines' statements, in binlog order
		"CREATE DATABASE d",
		"CREATE USER 'sx'@'%' IDENTIFIED BY " + m,
		"ALTER USER 'sx'@'%' IDENTIFIED VIA mysql_native_password USING PASSWORD(" + m + ")",
		"ALTER USER 'sx'@'%' IDENTIFIED BY " + m,
		"CREATE USER 'sw'@'%' IDENTIFIED WITH mysql_native_password AS " + m,
		"SET PASSWORD FOR 'sx'@'%'=" + m,
		"GRANT SELECT ON d.* TO 'sx'@'%' IDENTIFIED BY " + m,
		"CREATE USER 'sy'@'%' IDENTIFIED BY " + m + ", 'sz'@'%' IDENTIFIED BY " + m,
	}
	inClear := []string{"Cu1-create-secret", "Au2-alter-secret", "Ab9-alter-by-secret", asHash, setHash, "Gr4-grant-secret", `Nb6-backslash-secret\`, "Nb7-noescape-secret"}

	// The negative control: the binlog holds the secrets in clear, and
	// MaskedQuery of the same events is what binlog-tail must write.
	raw, masked := libraryQueries(t, s)
	all := strings.Join(raw, "\n")
	if strings.Contains(all, "CREATE SERVER") { // servers are binlogged by some versions only
		want = append(want[:8:8], "CREATE SERVER srv FOREIGN DATA WRAPPER mysql OPTIONS (HOST '127.0.0.1', USER 'sx', PASSWORD "+m+", DATABASE 'd')", want[8])
		inClear = append(inClear, "Sv5-server-secret")
	} else {
		t.Log("this server does not binlog CREATE SERVER")
	}
	for _, sec := range inClear {
		require.Contains(t, all, sec, "the binlog holds the secret in clear")
	}
	assert.Equal(t, want, masked)

	out := filepath.Join(t.TempDir(), "out.jsonl")
	r := runBinary(t, context.Background(), "--dsn", s.DSN(mariadb.ReplUser), "--out", out, "--start", "oldest",
		"--stop-at-current", "--server-id", "81")
	require.Equal(t, 0, r.code, r.stderr)
	file, err := os.ReadFile(out)
	require.NoError(t, err)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(file)), "\n") {
		var line struct{ Type, Query string }
		require.NoError(t, json.Unmarshal([]byte(l), &line), l)
		if line.Type == "query" {
			got = append(got, line.Query)
		}
	}
	assert.Equal(t, want, got, "the query lines, secrets masked")
	history, err := os.ReadFile(out + ".schema")
	require.NoError(t, err)
	for _, stmt := range []string{"CREATE USER 'sx'@'%' IDENTIFIED BY " + m, "ALTER USER 'sx'@'%' IDENTIFIED BY " + m} {
		js, _ := json.Marshal(stmt)
		assert.Contains(t, string(history), string(js), "FILE.schema stores the statement, masked")
	}
	for _, output := range []string{string(file), string(history), r.stdout, r.stderr} {
		for _, sec := range secrets {
			assert.NotContains(t, output, sec)
			assert.NotContains(t, output, strings.TrimSuffix(sec, `\`))
		}
	}
	t.Logf("%d query lines, %d bytes of output and %d of FILE.schema: no secret in any", len(got), len(file)+len(r.stdout)+len(r.stderr), len(history))
}

// libraryQueries streams s's binlog from its oldest file to its current
// position with the library and returns the Query events' statements
// (transaction markers left out) as the events hold them and masked.
func libraryQueries(t *testing.T, s *mariadb.Server) (raw, masked []string) {
	dsn, err := binlogstream.ParseDSN(s.DSN(mariadb.ReplUser))
	require.NoError(t, err)
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: dsn, ServerID: 82, Flavor: mysql.MariaDBFlavor})
	require.NoError(t, err)
	st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src,
		Start: binlogstream.StartAt(binlogstream.Position{File: s.BinaryLogs(t)[0].Name, Offset: 4})})
	require.NoError(t, err)
	file, pos := s.MasterStatus(t)
	st.StopAt(binlogstream.Position{File: file, Offset: pos})
	st.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if q, ok := ev.Event.(*replication.QueryEvent); ok && !tailline.IsTxnMarker(q.Query) {
			raw = append(raw, string(q.Query))
			masked = append(masked, ev.MaskedQuery())
		}
		return nil
	})
	require.NoError(t, st.Run(context.Background()))
	return raw, masked
}
