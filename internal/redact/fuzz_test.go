package redact

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzMask: any text is masked without a panic, String and Bytes agree,
// and masking a masked statement changes nothing.
func FuzzMask(f *testing.F) {
	for _, c := range maskCases {
		f.Add(c.in, uint8(0))
	}
	f.Add("CREATE USER a IDENTIFIED BY 'a\\', b IDENTIFIED BY 'pw'", uint8(NoBackslashEscapes))
	f.Fuzz(func(t *testing.T, q string, mode uint8) {
		m := Mode(mode) & (NoBackslashEscapes | ANSIQuotes | Unsure)
		got := String(q, m)
		if b := string(Bytes([]byte(q), m)); b != got {
			t.Fatalf("String %q, Bytes %q", got, b)
		}
		if again := String(got, m); again != got {
			t.Fatalf("masked twice %q, once %q", again, got)
		}
	})
}

// secretForms are credential statements with %[1]s where the secret
// literal goes.
var secretForms = []string{
	"CREATE USER u@'%%' IDENTIFIED BY %[1]s",
	"create user 'u'@'h' identified by password %[1]s, v identified by %[1]s",
	"ALTER USER u IDENTIFIED VIA mysql_native_password USING PASSWORD(%[1]s) OR unix_socket",
	"ALTER USER u IDENTIFIED VIA ed25519 USING %[1]s OR pam AS %[1]s",
	"ALTER USER u IDENTIFIED WITH caching_sha2_password AS %[1]s REPLACE %[1]s RETAIN CURRENT PASSWORD",
	"SET PASSWORD FOR u = PASSWORD(%[1]s)",
	"SET PASSWORD FOR 'u'@'%%' = %[1]s",
	"SET PASSWORD = OLD_PASSWORD(%[1]s)",
	"GRANT ALL ON *.* TO u IDENTIFIED BY %[1]s WITH GRANT OPTION",
	"CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (USER 'u', PASSWORD %[1]s, HOST 'h')",
	"CHANGE MASTER TO MASTER_USER='r', MASTER_PASSWORD=%[1]s",
	"CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD = %[1]s",
	"/*!50706 CREATE USER u IDENTIFIED\n/* c */ BY %[1]s */",
}

// secretAlphabet: the bytes of random secrets, quotes, backslashes and
// comment markers among them.
const secretAlphabet = "abcXYZ0189 '\"\\*/-#;(),=_@%\n\t"

// FuzzSecretNeverLeaks: a random secret written as a literal of any
// quoting into any credential form is gone from the masked statement.
func FuzzSecretNeverLeaks(f *testing.F) {
	f.Add(uint8(0), []byte("Qv7distinct"), uint8(0), uint8(0))
	f.Add(uint8(6), []byte("it's\\ a 'pw'"), uint8(1), uint8(1))
	f.Add(uint8(12), []byte("*/ -- #x"), uint8(0), uint8(2))
	f.Fuzz(func(t *testing.T, form uint8, raw []byte, quote, mode uint8) {
		m := Mode(mode) & (NoBackslashEscapes | ANSIQuotes)
		secret := make([]byte, len(raw))
		for i, c := range raw {
			secret[i] = secretAlphabet[int(c)%len(secretAlphabet)]
		}
		lit := literalOf(string(secret), quote%2 == 1, m)
		body := lit[1 : len(lit)-1] // the secret as the statement holds it
		tmpl := secretForms[int(form)%len(secretForms)]
		if len(body) < 6 || strings.Contains(fmt.Sprintf(tmpl, "''"), body) {
			return // too short to tell apart from the statement's own text
		}
		q := fmt.Sprintf(tmpl, lit)
		got := String(q, m)
		if strings.Contains(got, body) {
			t.Fatalf("the secret %q is in %q (from %q)", body, got, q)
		}
		if !strings.Contains(got, Mask) {
			t.Fatalf("nothing masked in %q", got)
		}
		if got := String(q, Unsure); strings.Contains(got, body) {
			t.Fatalf("mode unknown: the secret %q is in %q (from %q)", body, got, q)
		}
	})
}

// literalOf writes s as a '...' (or "...") literal the server reads back
// as s under mode m.
func literalOf(s string, double bool, m Mode) string {
	quote := byte('\'')
	if double {
		quote = '"'
	}
	backslash := m&NoBackslashEscapes == 0 && !(double && m&ANSIQuotes != 0)
	b := []byte{quote}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == quote:
			b = append(b, c, c)
		case c == '\\' && backslash:
			b = append(b, '\\', '\\')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, quote))
}
