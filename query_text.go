package binlogstream

import (
	"github.com/binlogstream/binlogstream/internal/queryevent"

	"github.com/go-mysql-org/go-mysql/replication"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"

	"github.com/binlogstream/binlogstream/internal/redact"
)

// SecretMask is what MaskSecrets and Event.MaskedQuery put in place of
// each secret literal.
const SecretMask = "'<secret>'"

// MaskSecrets returns sql with the secrets of credential statements
// masked: each password, password hash or authentication string literal
// of CREATE/ALTER USER, GRANT ... IDENTIFIED BY, SET PASSWORD, CREATE/ALTER
// SERVER options, CHANGE MASTER / CHANGE REPLICATION SOURCE, START
// SLAVE|REPLICA and a FEDERATED table's CONNECTION URL with a user part
// becomes SecretMask, every other byte staying as it was. A statement
// that is none of these is returned as it is, without allocating. Strings
// are read both with and without backslash escapes (the sql_mode
// NO_BACKSLASH_ESCAPES and ANSI_QUOTES change where they end), a literal
// being masked where either reading finds a secret; Event.MaskedQuery
// reads a Query event's statement under its own sql_mode.
func MaskSecrets(sql string) string { return redact.String(sql, redact.Unsure) }

// MaskedQuery returns the statement of a Query event with its secrets
// masked as MaskSecrets does, its strings read under the sql_mode the
// statement ran with (NO_BACKSLASH_ESCAPES, ANSI_QUOTES), or as MaskSecrets
// does when the event does not give it; "" when the
// event is not a Query event. MariaDB, and MySQL for some forms, write
// account statements to the binlog with their passwords in clear: a
// consumer that logs or ships statements uses this instead of Query.
func (e *Event) MaskedQuery() string {
	if e == nil || e.BinlogEvent == nil {
		return ""
	}
	q, ok := e.Event.(*replication.QueryEvent)
	if !ok {
		return ""
	}
	return string(redact.Bytes(q.Query, secretMode(q.StatusVars)))
}

// secretMode is how redact reads the strings of a Query event's
// statement: under the sql_mode it logs, or every way when it logs none.
func secretMode(statusVars []byte) redact.Mode {
	logged, ok := queryevent.LoggedSQLMode(statusVars)
	if !ok {
		return redact.Unsure
	}
	return sqlModeSecrets(logged)
}

// sqlModeSecrets is the redact mode of the sql_mode flags that change
// where a statement's strings end.
func sqlModeSecrets(sqlMode uint64) redact.Mode {
	var m redact.Mode
	mode := pmysql.SQLMode(sqlMode)
	if mode&pmysql.ModeNoBackslashEscapes != 0 {
		m |= redact.NoBackslashEscapes
	}
	if mode&pmysql.ModeANSIQuotes != 0 {
		m |= redact.ANSIQuotes
	}
	return m
}
