package publish

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// DefaultPrefix is the subject prefix when Config.Prefix is empty.
const DefaultPrefix = "binlog"

// none is the subject token of an absent schema or table.
const none = "_"

// Subject is the subject of a line of schema.table under prefix (a row,
// read or table line): prefix.<schema>.<table>, each name one subject
// token (Token), an empty one "_".
func Subject(prefix, schema, table string) string {
	return prefix + "." + Token(schema) + "." + Token(table)
}

// StatementSubject is the subject of a statement line whose default
// database is schema: prefix.<schema>._, and prefix._._ without one (a
// progress line's too). Its last token is "_" itself, which no table's
// name gives: Token writes a table named "_" %5F.
func StatementSubject(prefix, schema string) string {
	return prefix + "." + Token(schema) + "." + none
}

// Token is name as one subject token: the bytes a subject token cannot
// hold (".", "*", ">", whitespace, control and non-ASCII bytes) and "%"
// written %XX in hex, and a name that is "_" itself written %5F, so that
// "_" only ever means no name. An empty name is "_".
func Token(name string) string {
	if name == "" {
		return none
	}
	if name == none {
		return "%5F"
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || c == '.' || c == '*' || c == '>' || c == '%' {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

const hexDigits = "0123456789ABCDEF"

// MsgID is the Nats-Msg-Id of the line whose resume token is tok: the
// first 16 bytes of its SHA-256 in unpadded base64url. Every line's
// token names a distinct position, so the same line published twice
// has the same id and different lines have different ones.
func MsgID(tok []byte) string {
	sum := sha256.Sum256(tok)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}
