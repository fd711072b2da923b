// Package queryevent reads a Query event's status variables (the
// collation ids and sql_mode its statement ran under) and decodes the
// statement's text from the client charset it was sent in. Pure: no I/O.
package queryevent

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"

	lcharset "github.com/binlogstream/binlogstream/internal/charset"
)

// ServerCollation reads collation_server from a Query event's status
// variables (Q_CHARSET_CODE: character_set_client, collation_connection,
// collation_server, two bytes each): the default a CREATE DATABASE without
// a charset got. 0 when the event does not say.
func ServerCollation(vars []byte) uint64 {
	v := statusVar(vars, 4)
	if len(v) < 6 {
		return 0
	}
	return uint64(v[4]) | uint64(v[5])<<8
}

// ClientCollation reads character_set_client from a Query event's status
// variables (Q_CHARSET_CODE): the charset of its text. 0 when the event
// does not say.
func ClientCollation(vars []byte) uint64 {
	v := statusVar(vars, 4)
	if len(v) < 6 {
		return 0
	}
	return uint64(v[0]) | uint64(v[1])<<8
}

// StatementText is a Query event's text in UTF-8, decoded from the
// client charset it was sent in (cs): the server reads names in it that
// way. Text that does not decode is returned as it is.
func StatementText(q []byte, cs string) string {
	if lcharset.IsUTF8(cs) || cs == "binary" || lcharset.IsASCII(string(q)) {
		return string(q)
	}
	if s, ok := lcharset.Decode(q, cs); ok && !strings.ContainsRune(s, utf8.RuneError) {
		return s
	}
	return string(q)
}

// SQLMode reads the sql_mode a Query event's statement ran under from
// its status variables (Q_SQL_MODE_CODE), 0 when the event does not say.
func SQLMode(vars []byte) uint64 {
	mode, _ := LoggedSQLMode(vars)
	return mode
}

// LoggedSQLMode is SQLMode, and whether the event says it at all.
func LoggedSQLMode(vars []byte) (mode uint64, ok bool) {
	v := statusVar(vars, 1)
	if len(v) < 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(v), true
}

// statusVar is the value of status variable want in a Query event's
// status variables, nil when they do not have it or cannot be read that
// far.
func statusVar(vars []byte, want byte) []byte {
	for len(vars) > 0 {
		code := vars[0]
		vars = vars[1:]
		n := 0
		switch code {
		case 0, 3, 10: // Q_FLAGS2_CODE, Q_AUTO_INCREMENT, Q_MASTER_DATA_WRITTEN_CODE
			n = 4
		case 1, 9, 17: // Q_SQL_MODE_CODE, Q_TABLE_MAP_FOR_UPDATE_CODE, Q_DDL_LOGGED_WITH_XID
			n = 8
		case 2: // Q_CATALOG_CODE: length, text, NUL
			if len(vars) < 1 {
				return nil
			}
			n = 1 + int(vars[0]) + 1
		case 4: // Q_CHARSET_CODE: three collation ids
			n = 6
		case 5, 6: // Q_TIME_ZONE_CODE, Q_CATALOG_NZ_CODE: length, text
			if len(vars) < 1 {
				return nil
			}
			n = 1 + int(vars[0])
		case 7, 8, 18: // Q_LC_TIME_NAMES_CODE, Q_CHARSET_DATABASE_CODE, Q_DEFAULT_COLLATION_FOR_UTF8MB4
			n = 2
		case 11: // Q_INVOKER: user and host, each with a length byte
			if len(vars) < 1 || len(vars) < 2+int(vars[0]) {
				return nil
			}
			n = 1 + int(vars[0]) + 1 + int(vars[1+int(vars[0])])
		case 13, 128: // Q_MICROSECONDS, MariaDB's Q_HRNOW
			n = 3
		case 16, 19, 20, 130: // one byte each
			n = 1
		case 129: // MariaDB's Q_XID
			n = 8
		default: // Q_UPDATED_DB_NAMES and unknown codes: their length is not known here
			return nil
		}
		if n > len(vars) {
			return nil
		}
		if code == want {
			return vars[:n]
		}
		vars = vars[n:]
	}
	return nil
}
