package redact

import (
	"strings"
	"testing"
)

// M is Mask, short for the tables.
const M = Mask

var maskCases = []struct{ name, in, want string }{
	// CREATE USER / ALTER USER, MariaDB and MySQL.
	{"identified by", `CREATE USER repl@'127.0.0.1' IDENTIFIED BY 'replpass'`, `CREATE USER repl@'127.0.0.1' IDENTIFIED BY ` + M},
	{"lower case, newlines", "create user\n\t'a'@'%'\r\nidentified\nby\n'pw'", "create user\n\t'a'@'%'\r\nidentified\nby\n" + M},
	{"by password hash", `CREATE USER a IDENTIFIED BY PASSWORD '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'`, `CREATE USER a IDENTIFIED BY PASSWORD ` + M},
	{"several users", `CREATE USER a IDENTIFIED BY 'p1', 'b'@'h' IDENTIFIED BY PASSWORD 'h2', c, d IDENTIFIED VIA ed25519 USING PASSWORD('p3')`,
		`CREATE USER a IDENTIFIED BY ` + M + `, 'b'@'h' IDENTIFIED BY PASSWORD ` + M + `, c, d IDENTIFIED VIA ed25519 USING PASSWORD(` + M + `)`},
	{"or replace, if not exists", `CREATE OR REPLACE USER IF NOT EXISTS a IDENTIFIED BY 'p' REQUIRE SSL WITH MAX_QUERIES_PER_HOUR 10 PASSWORD EXPIRE INTERVAL 10 DAY ACCOUNT LOCK`,
		`CREATE OR REPLACE USER IF NOT EXISTS a IDENTIFIED BY ` + M + ` REQUIRE SSL WITH MAX_QUERIES_PER_HOUR 10 PASSWORD EXPIRE INTERVAL 10 DAY ACCOUNT LOCK`},
	{"tls options stay", `CREATE USER a REQUIRE SUBJECT '/CN=a' AND ISSUER '/CN=ca' AND CIPHER 'AES'`, `CREATE USER a REQUIRE SUBJECT '/CN=a' AND ISSUER '/CN=ca' AND CIPHER 'AES'`},
	{"with plugin by", `ALTER USER a IDENTIFIED WITH caching_sha2_password BY 'pw'`, `ALTER USER a IDENTIFIED WITH caching_sha2_password BY ` + M},
	{"with quoted plugin as", `CREATE USER 'a'@'%' IDENTIFIED WITH 'caching_sha2_password' AS '$A$005$abc'`, `CREATE USER 'a'@'%' IDENTIFIED WITH 'caching_sha2_password' AS ` + M},
	{"as hex", `CREATE USER 'a'@'%' IDENTIFIED WITH 'caching_sha2_password' AS 0x24412430303524`, `CREATE USER 'a'@'%' IDENTIFIED WITH 'caching_sha2_password' AS ` + M},
	{"via using", `CREATE USER a IDENTIFIED VIA pam USING 'mariadb'`, `CREATE USER a IDENTIFIED VIA pam USING ` + M},
	{"via plugin only", `ALTER USER a IDENTIFIED VIA unix_socket`, `ALTER USER a IDENTIFIED VIA unix_socket`},
	{"via using password", `ALTER USER a IDENTIFIED VIA mysql_native_password USING PASSWORD('pw')`, `ALTER USER a IDENTIFIED VIA mysql_native_password USING PASSWORD(` + M + `)`},
	{"or chain", `CREATE USER a IDENTIFIED VIA ed25519 USING PASSWORD('p1') OR unix_socket OR mysql_native_password AS '*hash' OR pam USING 'svc'`,
		`CREATE USER a IDENTIFIED VIA ed25519 USING PASSWORD(` + M + `) OR unix_socket OR mysql_native_password AS ` + M + ` OR pam USING ` + M},
	{"random password", `CREATE USER a IDENTIFIED BY RANDOM PASSWORD, b IDENTIFIED WITH sha256_password BY RANDOM PASSWORD`,
		`CREATE USER a IDENTIFIED BY RANDOM PASSWORD, b IDENTIFIED WITH sha256_password BY RANDOM PASSWORD`},
	{"replace retain", `ALTER USER u IDENTIFIED BY 'new' REPLACE 'old' RETAIN CURRENT PASSWORD`, `ALTER USER u IDENTIFIED BY ` + M + ` REPLACE ` + M + ` RETAIN CURRENT PASSWORD`},
	{"mysql 2fa", `CREATE USER u IDENTIFIED BY 'p1' AND IDENTIFIED WITH authentication_ldap_simple BY 'p2' INITIAL AUTHENTICATION IDENTIFIED BY 'p3'`,
		`CREATE USER u IDENTIFIED BY ` + M + ` AND IDENTIFIED WITH authentication_ldap_simple BY ` + M + ` INITIAL AUTHENTICATION IDENTIFIED BY ` + M},
	{"challenge response", `ALTER USER u 2 FACTOR FINISH REGISTRATION SET CHALLENGE_RESPONSE AS 'resp'`, `ALTER USER u 2 FACTOR FINISH REGISTRATION SET CHALLENGE_RESPONSE AS ` + M},
	{"password options stay", `ALTER USER a PASSWORD EXPIRE NEVER PASSWORD HISTORY 5 PASSWORD REQUIRE CURRENT`, `ALTER USER a PASSWORD EXPIRE NEVER PASSWORD HISTORY 5 PASSWORD REQUIRE CURRENT`},

	// Quoting.
	{"backslash escapes", `CREATE USER a IDENTIFIED BY 'it\'s \\ x', b IDENTIFIED BY 'q'`, `CREATE USER a IDENTIFIED BY ` + M + `, b IDENTIFIED BY ` + M},
	{"doubled quotes", `CREATE USER a IDENTIFIED BY 'it''s', b IDENTIFIED BY "say ""hi"""`, `CREATE USER a IDENTIFIED BY ` + M + `, b IDENTIFIED BY ` + M},
	{"adjacent strings", `CREATE USER a IDENTIFIED BY 'pa' "ss" 'wd'`, `CREATE USER a IDENTIFIED BY ` + M},
	{"introducer", `CREATE USER a IDENTIFIED BY _utf8mb4'pw' COLLATE utf8mb4_bin`, `CREATE USER a IDENTIFIED BY _utf8mb4` + M + ` COLLATE utf8mb4_bin`},
	{"comments", "CREATE /* IDENTIFIED BY 'no' */ USER a -- IDENTIFIED BY 'no'\nIDENTIFIED # c\n BY /* c */ 'pw'",
		"CREATE /* IDENTIFIED BY 'no' */ USER a -- IDENTIFIED BY 'no'\nIDENTIFIED # c\n BY /* c */ " + M},
	{"executable comment", "/*!50706 CREATE USER a IDENTIFIED BY 'pw' */", "/*!50706 CREATE USER a IDENTIFIED BY " + M + " */"},
	{"mariadb executable comment", "/*M!100401 ALTER USER a IDENTIFIED BY 'pw'*/", "/*M!100401 ALTER USER a IDENTIFIED BY " + M + "*/"},
	{"keyword in a name", "CREATE USER `identified`@'%' IDENTIFIED BY 'pw'", "CREATE USER `identified`@'%' IDENTIFIED BY " + M},
	{"keyword in a string", `CREATE USER 'identified by'@'%'`, `CREATE USER 'identified by'@'%'`},
	{"unclosed", `CREATE USER a IDENTIFIED BY 'pw`, `CREATE USER a IDENTIFIED BY ` + M},

	// SET PASSWORD.
	{"set password function", `SET PASSWORD FOR 'a'@'%' = PASSWORD('pw')`, `SET PASSWORD FOR 'a'@'%' = PASSWORD(` + M + `)`},
	{"set own password", `SET PASSWORD = PASSWORD('pw')`, `SET PASSWORD = PASSWORD(` + M + `)`},
	{"set password hash", `set password for a = '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'`, `set password for a = ` + M},
	{"old password", `SET PASSWORD FOR a = OLD_PASSWORD('pw')`, `SET PASSWORD FOR a = OLD_PASSWORD(` + M + `)`},
	{"set password replace", `SET PASSWORD FOR u = 'new' REPLACE 'old' RETAIN CURRENT PASSWORD`, `SET PASSWORD FOR u = ` + M + ` REPLACE ` + M + ` RETAIN CURRENT PASSWORD`},
	{"set password to random", `SET PASSWORD FOR u TO RANDOM`, `SET PASSWORD FOR u TO RANDOM`},
	{"set statement for", `SET STATEMENT max_statement_time=10 FOR SET PASSWORD FOR a = PASSWORD('pw')`, `SET STATEMENT max_statement_time=10 FOR SET PASSWORD FOR a = PASSWORD(` + M + `)`},
	{"set variable", `SET @x = 'not a secret'`, `SET @x = 'not a secret'`},
	{"password of an expression", `SET PASSWORD FOR a = PASSWORD(CONCAT('p', "w"))`, `SET PASSWORD FOR a = PASSWORD(CONCAT(` + M + `, ` + M + `))`},

	// GRANT.
	{"grant identified by", `GRANT SELECT ON d.* TO 'a'@'%' IDENTIFIED BY 'pw' WITH GRANT OPTION`, `GRANT SELECT ON d.* TO 'a'@'%' IDENTIFIED BY ` + M + ` WITH GRANT OPTION`},
	{"grant without", `GRANT ALL ON *.* TO a`, `GRANT ALL ON *.* TO a`},

	// Servers.
	{"create server", `CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (HOST '10.0.0.1', USER 'u', PASSWORD 'pw', PORT 3306, DATABASE 'd')`,
		`CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (HOST '10.0.0.1', USER 'u', PASSWORD ` + M + `, PORT 3306, DATABASE 'd')`},
	{"alter server, other option", `ALTER SERVER s OPTIONS (PASSWORD "pw", secret_key 'k', SOCKET '/s')`, `ALTER SERVER s OPTIONS (PASSWORD ` + M + `, secret_key ` + M + `, SOCKET '/s')`},
	{"federated connection", `CREATE TABLE t (id INT) ENGINE=FEDERATED CONNECTION='mysql://u:pw@h:3306/d/t'`, `CREATE TABLE t (id INT) ENGINE=FEDERATED CONNECTION=` + M},
	{"connection to a server", `CREATE TABLE t (id INT) ENGINE=FEDERATED CONNECTION='s/t'`, `CREATE TABLE t (id INT) ENGINE=FEDERATED CONNECTION='s/t'`},

	// Replication.
	{"change master", `CHANGE MASTER TO MASTER_HOST='h', MASTER_USER='repl', MASTER_PASSWORD='pw', MASTER_PORT=3306`,
		`CHANGE MASTER TO MASTER_HOST='h', MASTER_USER='repl', MASTER_PASSWORD=` + M + `, MASTER_PORT=3306`},
	{"change replication source", `change replication source to source_password = 'pw', SOURCE_USER='r'`, `change replication source to source_password = ` + M + `, SOURCE_USER='r'`},
	{"start replica", `START REPLICA USER='r' PASSWORD='pw' DEFAULT_AUTH='p'`, `START REPLICA USER='r' PASSWORD=` + M + ` DEFAULT_AUTH='p'`},

	// Stored programs.
	{"procedure body", `CREATE DEFINER=root@localhost PROCEDURE p() BEGIN CREATE USER x IDENTIFIED BY 'pw'; SELECT 'keep'; END`,
		`CREATE DEFINER=root@localhost PROCEDURE p() BEGIN CREATE USER x IDENTIFIED BY ` + M + `; SELECT 'keep'; END`},
	{"compound", `BEGIN NOT ATOMIC ALTER USER a IDENTIFIED BY 'pw'; END`, `BEGIN NOT ATOMIC ALTER USER a IDENTIFIED BY ` + M + `; END`},
	{"parenthesised", `(CREATE USER a IDENTIFIED BY 'pw')`, `(CREATE USER a IDENTIFIED BY ` + M + `)`},

	// Statements left as they are.
	{"begin", `BEGIN`, `BEGIN`},
	{"insert", `INSERT INTO t VALUES ('IDENTIFIED BY', PASSWORD('x'))`, `INSERT INTO t VALUES ('IDENTIFIED BY', PASSWORD('x'))`},
	{"create table", `CREATE TABLE t (password VARCHAR(10) DEFAULT 'x', c INT COMMENT 'identified by')`, `CREATE TABLE t (password VARCHAR(10) DEFAULT 'x', c INT COMMENT 'identified by')`},
	{"replace function", `CREATE VIEW v AS SELECT REPLACE(a, 'x', 'y') FROM t`, `CREATE VIEW v AS SELECT REPLACE(a, 'x', 'y') FROM t`},
	{"empty", ``, ``},
}

func TestMask(t *testing.T) {
	for _, c := range maskCases {
		t.Run(c.name, func(t *testing.T) {
			if got := String(c.in, 0); got != c.want {
				t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			if got := string(Bytes([]byte(c.in), 0)); got != c.want {
				t.Errorf("Bytes(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			if Has(c.in, 0) != (c.in != c.want) {
				t.Errorf("Has(%q) = %v", c.in, !(c.in != c.want))
			}
		})
	}
}

func TestModes(t *testing.T) {
	// Without backslash escapes 'a\' ends at its second quote, and the
	// next user's password is a literal of its own.
	in := `CREATE USER a IDENTIFIED BY 'a\', b IDENTIFIED BY 'pw'`
	want := `CREATE USER a IDENTIFIED BY ` + M + `, b IDENTIFIED BY ` + M
	if got := String(in, NoBackslashEscapes); got != want {
		t.Errorf("NoBackslashEscapes: got %q", got)
	}
	// Not knowing the mode, both readings' literals are masked.
	in = `CREATE USER a IDENTIFIED BY 'a\', b IDENTIFIED BY 'Zx9-secret'`
	if got := String(in, 0); got != `CREATE USER a IDENTIFIED BY `+M+`Zx9-secret'` {
		t.Errorf("backslash escapes: got %q", got)
	}
	if got := String(in, Unsure); got != `CREATE USER a IDENTIFIED BY `+M {
		t.Errorf("Unsure: got %q", got)
	}
	in = `CREATE USER "a\" IDENTIFIED BY 'pw'`
	want = `CREATE USER "a\" IDENTIFIED BY ` + M
	if got := String(in, ANSIQuotes); got != want {
		t.Errorf("ANSIQuotes: got %q", got)
	}
}

// TestUnchangedIsSame: a statement without secrets comes back as the same
// string and slice, and the check allocates nothing.
func TestUnchangedIsSame(t *testing.T) {
	for _, q := range []string{"BEGIN", "COMMIT", "INSERT INTO t VALUES (1, 'x')", "CREATE TABLE t (id INT)", "GRANT ALL ON *.* TO a"} {
		b := []byte(q)
		if got := Bytes(b, 0); &got[0] != &b[0] {
			t.Errorf("Bytes(%q) copied", q)
		}
		if n := testing.AllocsPerRun(100, func() { _ = String(q, 0); _ = Bytes(b, 0) }); n != 0 {
			t.Errorf("%q: %v allocations", q, n)
		}
	}
}

func BenchmarkMaskNone(b *testing.B) {
	q := []byte("INSERT INTO t VALUES " + strings.Repeat("(1, 'abc'),", 100) + "(2, 'x')")
	b.ReportAllocs()
	for b.Loop() {
		_ = Bytes(q, 0)
	}
}

func BenchmarkMaskCreateUser(b *testing.B) {
	q := []byte(`CREATE USER 'a'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('p1') OR unix_socket`)
	b.ReportAllocs()
	for b.Loop() {
		_ = Bytes(q, 0)
	}
}
