package binlogstream_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func TestParseDSN(t *testing.T) {
	tcp := func(user, pw, host string, port uint16) binlogstream.DSN {
		return binlogstream.DSN{User: user, Password: pw, Host: host, Port: port}
	}
	ok := map[string]binlogstream.DSN{
		"u:p@tcp(db.example:3307)/":                       tcp("u", "p", "db.example", 3307),
		"u:p@tcp(db.example:3307)":                        tcp("u", "p", "db.example", 3307),
		"u:p@tcp(db.example)/":                            tcp("u", "p", "db.example", 3306),
		"u@tcp([::1]:3307)/":                              tcp("u", "", "::1", 3307),
		"u:p@tcp(h:3306)/app":                             tcp("u", "p", "h", 3306),
		"u:p@tcp(h:3306)/?charset=utf8mb4&parseTime=true": tcp("u", "p", "h", 3306),
		"u:p@tcp(h:3306)/app?loc=Local&timeout=5s":        tcp("u", "p", "h", 3306),
		"u:p@/app":                           tcp("u", "p", "127.0.0.1", 3306),
		"u:p@/":                              tcp("u", "p", "127.0.0.1", 3306),
		"u:p@tcp/":                           tcp("u", "p", "127.0.0.1", 3306),
		"u:p@w@rd:x@tcp(h:1)/":               tcp("u", "p@w@rd:x", "h", 1),
		"u:p/a(s)s?@tcp(h:1)/":               tcp("u", "p/a(s)s?", "h", 1),
		"u:p@unix(/run/mysqld/mysqld.sock)/": {User: "u", Password: "p", Socket: "/run/mysqld/mysqld.sock"},
		"u:p@unix(/run/mysqld/mysqld.sock)/app?charset=utf8": {User: "u", Password: "p", Socket: "/run/mysqld/mysqld.sock"},
		"u@unix/": {User: "u", Socket: "/tmp/mysql.sock"},
	}
	for s, want := range ok {
		d, err := binlogstream.ParseDSN(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, d, s)
	}

	const pw = "Zq8-secret"
	bad := map[string]string{ // DSN -> what the message names
		"u:" + pw + "@tcp(h:notaport)/":            `bad port "notaport"`,
		"u:" + pw + "@tcp(:3306)/":                 "empty host",
		"u:" + pw + "@tcp(h:3306":                  "no closing ')'",
		"u:" + pw + "@tcp(h:3306)x/":               `want '/' after the address, not "x/"`,
		"u:" + pw + "@h:3306":                      `network "h:3306": want tcp(HOST:PORT) or unix(PATH)`,
		"u:" + pw + "@tcp6(h)/":                    `network "tcp6"`,
		"u:" + pw + "@unix(mysql.sock)/":           "unix(mysql.sock): want a path with a '/'",
		"u:" + pw + "@tcp(h)/?sql_mode=ANSI":       "parameter sql_mode is not known here",
		"u:" + pw + "@tcp(h)/?compress=true":       "parameter compress cannot apply to a binlog dump",
		"u:" + pw + "@tcp(h)/?allowOldPasswords=1": "parameter allowOldPasswords cannot apply",
		":" + pw + "@tcp(h)/":                      "empty user",
		"tcp(h:1)/":                                "no user: want USER[:PASSWORD]@tcp(h:1)/",
		"nothing":                                  "want USER[:PASSWORD]@tcp(HOST:PORT)/",
	}
	for s, want := range bad {
		_, err := binlogstream.ParseDSN(s)
		require.ErrorIs(t, err, binlogstream.ErrInvalidConfig, s)
		assert.Contains(t, err.Error(), want, s)
		assert.NotContains(t, err.Error(), pw, s)
	}
}

func TestDSNString(t *testing.T) {
	d, err := binlogstream.ParseDSN("u:p@unix(/run/m.sock)/")
	require.NoError(t, err)
	assert.Equal(t, "u:xxxxx@unix(/run/m.sock)/", d.String())
	assert.Equal(t, "/run/m.sock", d.Addr())
	d, err = binlogstream.ParseDSN("u@tcp([::1]:3307)/")
	require.NoError(t, err)
	assert.Equal(t, "u@tcp([::1]:3307)/", d.String())
}

func TestParseDSNTLS(t *testing.T) {
	d, err := binlogstream.ParseDSN("u:p@tcp(h:1)/?tls=true&tls-ca=/etc/ca+1.pem&tls-cert=/c.pem&tls-key=/k%20x.pem")
	require.NoError(t, err)
	assert.Equal(t, binlogstream.DSN{User: "u", Password: "p", Host: "h", Port: 1,
		TLS: "true", TLSCA: "/etc/ca+1.pem", TLSCert: "/c.pem", TLSKey: "/k x.pem"}, d)
	assert.Equal(t, "u:xxxxx@tcp(h:1)/?tls=true", d.String())
	d, err = binlogstream.ParseDSN("u@tcp(h)/?tls-ca=/ca.pem")
	require.NoError(t, err)
	assert.Equal(t, "true", d.TLS, "a CA asks for verification")
	for _, mode := range []string{"skip-verify", "preferred", "false"} {
		d, err := binlogstream.ParseDSN("u@tcp(h)/?tls=" + mode)
		require.NoError(t, err)
		assert.Equal(t, mode, d.TLS)
	}

	_, err = binlogstream.ParseDSN("u@tcp(h)/?tls=custom")
	require.ErrorIs(t, err, binlogstream.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "tls=custom: want true, skip-verify, preferred or false")

	// The files are read when a source is made.
	for dsn, msg := range map[string]string{
		"u@tcp(h)/?tls=true&tls-ca=/nonexistent/ca.pem": "tls-ca: open /nonexistent/ca.pem",
		"u@tcp(h)/?tls=skip-verify&tls-ca=/ca.pem":      "tls-ca is for verifying the server: it needs tls=true",
		"u@tcp(h)/?tls=false&tls-cert=/c.pem":           "need tls=true",
		"u@tcp(h)/?tls=true&tls-cert=/c.pem":            "tls-cert and tls-key go together",
		"u@tcp(h)/?tls=true&tls-cert=/c.pem&tls-key=/k": "tls-cert /c.pem, tls-key /k: open /c.pem",
		"u@tcp(h)/?tls=true&tls-ca=" + os.DevNull:       "no PEM certificate in it",
	} {
		d, err := binlogstream.ParseDSN(dsn)
		require.NoError(t, err, dsn)
		_, err = binlogstream.NewSyncerSource(binlogstream.SyncerConfig{DSN: d, ServerID: 1})
		require.ErrorIs(t, err, binlogstream.ErrInvalidConfig, dsn)
		assert.Contains(t, err.Error(), msg, dsn)
	}
}

// A URL-form DSN is refused with the form to write, password masked; it
// is not read as a DSN whose user is the scheme.
func TestParseDSNRefusesURLs(t *testing.T) {
	for _, s := range []string{"mysql://repl@db1:3306/", "mysql://repl:Zq8-secret@db1:3306/app", "mariadb://db1"} {
		_, err := binlogstream.ParseDSN(s)
		require.Error(t, err, s)
		assert.Contains(t, err.Error(), "URL-form DSNs", s)
		assert.Contains(t, err.Error(), "write USER[:PASSWORD]@tcp(HOST:PORT)/", s)
		assert.NotContains(t, err.Error(), "Zq8-secret")
	}
	_, err := binlogstream.ParseDSN("mysql://repl:Zq8-secret@db1:3306/app")
	assert.Contains(t, err.Error(), "mysql://repl:xxxxx@db1:3306/app")
}
