package binlogstream

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// DSN is a server address with credentials, written as go-sql-driver/mysql
// DSNs are: USER[:PASSWORD]@tcp(HOST[:PORT])/ or USER[:PASSWORD]@unix(PATH)/.
type DSN struct {
	User, Password string
	Host           string
	Port           uint16
	// Socket is a unix socket path; when set, Host and Port are unused.
	Socket string
	// TLS is the DSN's tls parameter: "" or "false" for none; "true" to
	// verify the server's certificate (against TLSCA, else the system
	// roots) and host name; "skip-verify" to encrypt without verifying;
	// "preferred" for skip-verify when the server offers TLS, plain when
	// it does not.
	TLS string
	// TLSCA, TLSCert and TLSKey are PEM files (parameters tls-ca, tls-cert,
	// tls-key): the CA to verify the server with, and a client certificate
	// and its key for servers that require one (REQUIRE X509).
	TLSCA, TLSCert, TLSKey string
}

// Addr is the address to dial: the socket path, or HOST:PORT.
func (d DSN) Addr() string {
	if d.Socket != "" {
		return d.Socket
	}
	return net.JoinHostPort(d.Host, strconv.Itoa(int(d.Port)))
}

// String renders the DSN with the password replaced by "xxxxx", so it is
// safe for errors and logs.
func (d DSN) String() string {
	pw := ""
	if d.Password != "" {
		pw = ":xxxxx"
	}
	q := ""
	if d.TLS != "" {
		q = "?tls=" + d.TLS
	}
	if d.Socket != "" {
		return fmt.Sprintf("%s%s@unix(%s)/%s", d.User, pw, d.Socket, q)
	}
	return fmt.Sprintf("%s%s@tcp(%s)/%s", d.User, pw, d.Addr(), q)
}

// TLSConfig returns the tls.Config the DSN's TLS fields ask for, reading
// the files, or nil for none. preferred says a server without TLS may be
// spoken to in plain (tls=preferred).
func (d DSN) TLSConfig() (cfg *tls.Config, preferred bool, err error) {
	files := d.TLSCA != "" || d.TLSCert != "" || d.TLSKey != ""
	switch d.TLS {
	case "", "false":
		if files {
			return nil, false, configError("DSN %s: tls-ca, tls-cert and tls-key need tls=true (or skip-verify, preferred)", d)
		}
		return nil, false, nil
	case "true", "skip-verify", "preferred":
	default:
		return nil, false, configError("DSN %s: tls=%s: want true, skip-verify, preferred or false "+
			"(a go-sql-driver registered TLS config name cannot apply: use tls-ca, tls-cert and tls-key)", d, d.TLS)
	}
	cfg = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: d.Host}
	if d.Socket != "" {
		cfg.ServerName = "localhost"
	}
	if d.TLS != "true" {
		if d.TLSCA != "" {
			return nil, false, configError("DSN %s: tls-ca is for verifying the server: it needs tls=true", d)
		}
		cfg.InsecureSkipVerify = true
	}
	if d.TLSCA != "" {
		pem, err := os.ReadFile(d.TLSCA)
		if err != nil {
			return nil, false, configError("DSN tls-ca: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, false, configError("DSN tls-ca %s: no PEM certificate in it", d.TLSCA)
		}
	}
	if (d.TLSCert == "") != (d.TLSKey == "") {
		return nil, false, configError("DSN %s: tls-cert and tls-key go together", d)
	}
	if d.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(d.TLSCert, d.TLSKey)
		if err != nil {
			return nil, false, configError("DSN tls-cert %s, tls-key %s: %v", d.TLSCert, d.TLSKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, d.TLS == "preferred", nil
}

// dsnIgnored are go-sql-driver parameters that shape SQL sessions and mean
// nothing to a binlog dump; ParseDSN accepts and ignores them.
var dsnIgnored = map[string]bool{
	"charset": true, "collation": true, "parseTime": true, "loc": true, "timeout": true,
	"readTimeout": true, "writeTimeout": true, "interpolateParams": true, "clientFoundRows": true,
	"columnsWithAlias": true, "multiStatements": true, "maxAllowedPacket": true,
	"rejectReadOnly": true, "checkConnLiveness": true, "strict": true,
}

// dsnRefused are go-sql-driver parameters ParseDSN cannot honour, and why.
var dsnRefused = map[string]string{
	"allowCleartextPasswords":  "the authentication method is negotiated by go-mysql",
	"allowNativePasswords":     "the authentication method is negotiated by go-mysql",
	"allowOldPasswords":        "the authentication method is negotiated by go-mysql",
	"allowFallbackToPlaintext": "use tls=preferred",
	"serverPubKey":             "go-mysql cannot use a registered server public key",
	"connectionAttributes":     "go-mysql sets the connection attributes of a dump",
	"compress":                 "go-mysql's dump connection is not compressed",
}

// ParseDSN reads a go-sql-driver/mysql DSN,
// USER[:PASSWORD]@[tcp[(HOST[:PORT])]|unix[(PATH)]]/[DBNAME][?PARAMS]:
// the port defaults to 3306, a missing address to 127.0.0.1:3306 (tcp)
// or /tmp/mysql.sock (unix). DBNAME is ignored (a dump reads the whole
// binlog), as are the parameters that only shape SQL sessions (charset,
// parseTime, loc, timeouts, ...); any other parameter is refused, naming
// it. The password may contain any character; a parameter value may hold
// '/' unescaped. Errors never contain the password.
func ParseDSN(s string) (DSN, error) {
	if scheme, _, ok := strings.Cut(s, "://"); ok && !strings.ContainsAny(scheme, "@:/(") {
		return DSN{}, configError("DSN %s: URL-form DSNs (%s://...) are not supported: write USER[:PASSWORD]@tcp(HOST:PORT)/, e.g. repl@tcp(db1:3306)/", redactURL(s), scheme)
	}
	// The credentials end at the first '@' after which an address parses,
	// so a password may contain '@'.
	var lastErr error
	for at := strings.IndexByte(s, '@'); at >= 0; {
		d, err := parseAddress(s[at+1:])
		if err == nil {
			cred := s[:at]
			if k := strings.IndexByte(cred, ':'); k >= 0 {
				d.User, d.Password = cred[:k], cred[k+1:]
			} else {
				d.User = cred
			}
			if d.User == "" {
				return DSN{}, configError("DSN %s: empty user", d)
			}
			return d, nil
		}
		lastErr = err
		next := strings.IndexByte(s[at+1:], '@')
		if next < 0 {
			break
		}
		at += 1 + next
	}
	if lastErr != nil {
		return DSN{}, configError("DSN %s: %v", redactDSN(s), lastErr)
	}
	if d, err := parseAddress(s); err == nil {
		return DSN{}, configError("DSN %s: no user: want USER[:PASSWORD]@%s", redactDSN(s), strings.TrimPrefix(d.String(), "@"))
	}
	return DSN{}, configError("DSN %s: want USER[:PASSWORD]@tcp(HOST:PORT)/", redactDSN(s))
}

// redactURL is a URL-form DSN with the password of its user info masked.
func redactURL(s string) string {
	scheme, rest, _ := strings.Cut(s, "://")
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return s
	}
	if user, _, ok := strings.Cut(rest[:at], ":"); ok {
		return scheme + "://" + user + ":xxxxx" + rest[at:]
	}
	return s
}

// parseAddress reads [NET[(ADDR)]][/[DBNAME][?PARAMS]] into a DSN without
// credentials.
func parseAddress(s string) (DSN, error) {
	var d DSN
	var netw, inner, rest string
	slash, paren := strings.IndexByte(s, '/'), strings.IndexByte(s, '(')
	switch {
	case paren >= 0 && (slash < 0 || paren < slash):
		end := strings.IndexByte(s[paren:], ')')
		if end < 0 {
			return d, fmt.Errorf("the address has no closing ')'")
		}
		end += paren
		netw, inner = s[:paren], s[paren+1:end]
		after := s[end+1:]
		if after != "" && after[0] != '/' {
			return d, fmt.Errorf("want '/' after the address, not %q", after)
		}
		rest = strings.TrimPrefix(after, "/")
	case slash >= 0:
		netw, rest = s[:slash], s[slash+1:]
	default:
		netw = s
	}
	switch netw {
	case "", "tcp":
		if inner == "" {
			inner = "127.0.0.1:3306"
		}
		host, port, err := net.SplitHostPort(inner)
		if err != nil {
			host, port = strings.Trim(inner, "[]"), "3306"
		}
		if host == "" {
			return d, fmt.Errorf("empty host in tcp(...)")
		}
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil || p == 0 {
			return d, fmt.Errorf("bad port %q in tcp(...)", port)
		}
		d.Host, d.Port = host, uint16(p)
	case "unix":
		if inner == "" {
			inner = "/tmp/mysql.sock"
		}
		if !strings.Contains(inner, "/") { // go-mysql would dial it over tcp
			return d, fmt.Errorf("unix(%s): want a path with a '/', e.g. unix(./%s)", inner, inner)
		}
		d.Socket = inner
	default:
		return d, fmt.Errorf("network %q: want tcp(HOST:PORT) or unix(PATH)", netw)
	}
	db, query, _ := strings.Cut(rest, "?")
	if strings.ContainsAny(db, "@()/") {
		return d, fmt.Errorf("bad database name %q", db)
	}
	if query == "" {
		return d, nil
	}
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		k, err := url.QueryUnescape(k)
		if err != nil {
			return d, fmt.Errorf("parameter %q: %v", kv, err)
		}
		v, err = url.PathUnescape(v)
		if err != nil {
			return d, fmt.Errorf("parameter %s: bad value: %v", k, err)
		}
		switch {
		case k == "tls":
			d.TLS = v
		case k == "tls-ca":
			d.TLSCA = v
		case k == "tls-cert":
			d.TLSCert = v
		case k == "tls-key":
			d.TLSKey = v
		case k == "":
		case dsnIgnored[k]:
		case dsnRefused[k] != "":
			return d, fmt.Errorf("parameter %s cannot apply to a binlog dump: %s", k, dsnRefused[k])
		default:
			return d, fmt.Errorf("parameter %s is not known here (go-sql-driver would set it as a session variable; a binlog dump has none)", k)
		}
	}
	switch d.TLS {
	case "":
		if d.TLSCA != "" {
			d.TLS = "true" // a CA to verify with asks for verification
		}
	case "true", "false", "skip-verify", "preferred":
	default:
		return d, fmt.Errorf("tls=%s: want true, skip-verify, preferred or false "+
			"(a go-sql-driver registered TLS config name cannot apply here: use tls-ca, tls-cert and tls-key)", d.TLS)
	}
	return d, nil
}

// redactDSN quotes s with whatever stands between the first ':' and the
// last '@' left out, for errors about a DSN that did not parse.
func redactDSN(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return "(without '@')"
	}
	if i := strings.IndexByte(s[:at], ':'); i >= 0 {
		return strconv.Quote(s[:i] + ":xxxxx" + s[at:])
	}
	return strconv.Quote(s)
}
