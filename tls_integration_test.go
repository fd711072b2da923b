package binlogstream_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestIntegrationTLS: a server with require_secure_transport=ON and
// certificates the test made. TLS set by DSN parameters applies to the dump
// and to query connections (Probe); a wrong CA fails with the certificate
// error, plain TCP is refused by the server, a REQUIRE X509 account needs
// the client certificate, and tls=preferred falls back to plain only on a
// server without TLS.
func TestIntegrationTLS(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	certs := mariadb.MakeCerts(t, t.TempDir())
	s := mariadb.Start(t, mariadb.Options{ExtraArgs: certs.RequireTLSArgs()})
	s.Exec(t, "SET SESSION sql_log_bin = 0",
		"CREATE USER 'x509u'@'%' IDENTIFIED BY 'x509pw' REQUIRE X509",
		"GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT ON *.* TO 'x509u'@'%'")
	start := binlogstream.StartAt(masterPos(t, s))
	s.Exec(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1), (2)")
	target := masterPos(t, s)
	want := []string{"query CREATE DATABASE d gtid=0-1-1", "query CREATE TABLE d.t (id INT PRIMARY KEY) gtid=0-1-2",
		"WriteRowsEventV1 d.t [[1]] gtid=0-1-3", "WriteRowsEventV1 d.t [[2]] gtid=0-1-3"}
	repl := fmt.Sprintf("%s:%s@tcp(%s)/", s.ReplUser(), s.ReplPassword(), s.Addr())
	x509u := fmt.Sprintf("x509u:x509pw@tcp(%s)/", s.Addr())

	// stream probes and streams over dsn; it returns the first error.
	stream := func(t *testing.T, dsn string) error {
		d, err := binlogstream.ParseDSN(dsn)
		require.NoError(t, err)
		src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: d, ServerID: 1001, Flavor: mysql.MariaDBFlavor})
		require.NoError(t, err)
		st, perr := src.Probe(context.Background())
		r := itStream(t, src, start, target, binlogstream.Config{MaxReconnectAttempts: -1}, nil)
		if perr != nil || r.err != nil {
			require.Error(t, perr, "the probe and the dump agree")
			require.Error(t, r.err, "the probe and the dump agree")
			assert.False(t, binlogstream.IsRetryable(r.err), "%v", r.err)
			return r.err
		}
		assert.Equal(t, target, st.Binlog)
		assert.Equal(t, want, r.entries)
		return nil
	}
	for name, dsn := range map[string]string{
		"verified":           repl + "?tls=true&tls-ca=" + certs.CA,
		"a CA implies tls":   repl + "?tls-ca=" + certs.CA,
		"skip-verify":        repl + "?tls=skip-verify",
		"preferred":          repl + "?tls=preferred",
		"client certificate": x509u + "?tls=true&tls-ca=" + certs.CA + "&tls-cert=" + certs.ClientCert + "&tls-key=" + certs.ClientKey,
	} {
		t.Run(name, func(t *testing.T) { require.NoError(t, stream(t, dsn)) })
	}
	for name, c := range map[string]struct{ dsn, msg string }{
		"wrong CA":       {repl + "?tls=true&tls-ca=" + certs.OtherCA, "x509: certificate signed by unknown authority"},
		"system roots":   {repl + "?tls=true", "x509: certificate signed by unknown authority"},
		"plain TCP":      {repl, "Access denied for user 'repl'@'127.0.0.1' (using password: YES); the server accepts these credentials over TLS only (require_secure_transport): add tls=true to the DSN"},
		"no client cert": {x509u + "?tls=true&tls-ca=" + certs.CA, "Access denied for user 'x509u'"},
	} {
		t.Run(name, func(t *testing.T) {
			err := stream(t, c.dsn)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.msg)
			assert.NotContains(t, err.Error(), s.ReplPassword())
			assert.NotContains(t, err.Error(), "x509pw")
		})
	}

	t.Run("a wrong password gets no TLS hint", func(t *testing.T) {
		bad := fmt.Sprintf("%s:%s@tcp(%s)/", s.ReplUser(), "wrong-"+s.ReplPassword(), s.Addr())
		err := stream(t, bad)
		require.ErrorContains(t, err, "Access denied")
		assert.NotContains(t, err.Error(), "tls=true", "the same credentials fail over TLS too")
		assert.NotContains(t, err.Error(), s.ReplPassword())
	})

	t.Run("no password", func(t *testing.T) {
		err := stream(t, fmt.Sprintf("%s@tcp(%s)/", s.ReplUser(), s.Addr()))
		require.ErrorContains(t, err, "Access denied")
		assert.Contains(t, err.Error(), "no password was given: put it in the DSN (the commands also read --password-file FILE and MYSQL_PWD)")
	})

	t.Run("server without TLS", func(t *testing.T) {
		plain := mariadb.Start(t, mariadb.Options{})
		d, err := binlogstream.ParseDSN(fmt.Sprintf("%s:%s@tcp(%s)/?tls=preferred", plain.ReplUser(), plain.ReplPassword(), plain.Addr()))
		require.NoError(t, err)
		src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: d, ServerID: 1001, Flavor: mysql.MariaDBFlavor})
		require.NoError(t, err)
		_, err = src.Probe(context.Background())
		require.NoError(t, err, "preferred: plain when the server has no TLS")
		from := binlogstream.StartAt(masterPos(t, plain))
		plain.Exec(t, "CREATE DATABASE d")
		r := itStream(t, src, from, masterPos(t, plain), binlogstream.Config{MaxReconnectAttempts: -1}, nil)
		require.NoError(t, r.err)
		assert.Equal(t, []string{"query CREATE DATABASE d gtid=0-1-1"}, r.entries)
		d.TLS = "true"
		_, err = d.Connect(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "does not support TLS")
	})
}
