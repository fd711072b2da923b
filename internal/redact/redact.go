// Package redact masks the secrets in the text of SQL statements: the
// passwords, password hashes and authentication strings of account
// statements (CREATE/ALTER USER, GRANT ... IDENTIFIED BY, SET PASSWORD),
// of CREATE/ALTER SERVER options, of CHANGE MASTER / CHANGE REPLICATION
// SOURCE and START SLAVE|REPLICA, and the credentials of a FEDERATED
// table's CONNECTION URL. MariaDB, and MySQL for some forms, write such
// statements to the binlog as they were sent.
//
// Each secret literal (with its quotes, and the pieces of a literal
// written as adjacent strings) becomes Mask; every other byte of the
// statement stays as it was. A statement whose first keyword cannot start
// one of those statements (or a stored program holding one) is returned
// as it is after a look at that keyword, without allocating. Where a
// credential statement's grammar leaves it open whether a literal is a
// secret, it is masked. The package imports nothing.
package redact

// Mask replaces each secret literal.
const Mask = "'<secret>'"

// Mode holds the sql_mode flags that change where a statement's strings
// end.
type Mode uint8

const (
	// NoBackslashEscapes: a backslash in a string is a plain byte
	// (sql_mode NO_BACKSLASH_ESCAPES).
	NoBackslashEscapes Mode = 1 << iota
	// ANSIQuotes: "..." is an identifier, in which a backslash is a
	// plain byte (sql_mode ANSI_QUOTES). The masker still masks one
	// where a secret is expected.
	ANSIQuotes
	// Unsure: the sql_mode is not known. A literal is masked where it
	// is one under any of the modes above, which read a backslash in a
	// string differently and so end strings at different places.
	Unsure
)

// String returns q with its secrets masked; q itself when it has none.
func String(q string, m Mode) string {
	spans := secrets(q, m)
	if spans == nil {
		return q
	}
	b := make([]byte, 0, len(q)+len(spans)*len(Mask))
	return string(apply(b, q, spans))
}

// Bytes returns q with its secrets masked in a new slice; q itself when
// it has none.
func Bytes(q []byte, m Mode) []byte {
	spans := secrets(q, m)
	if spans == nil {
		return q
	}
	return apply(make([]byte, 0, len(q)+len(spans)*len(Mask)), q, spans)
}

// Has reports whether q holds a secret that String would mask.
func Has[T ~string | ~[]byte](q T, m Mode) bool { return secrets(q, m) != nil }

type span struct{ start, end int }

func apply[T text](b []byte, q T, spans []span) []byte {
	at := 0
	for _, s := range spans {
		b = append(b, q[at:s.start]...)
		b = append(b, Mask...)
		at = s.end
	}
	return append(b, q[at:]...)
}

// secrets returns the spans of q's secret literals in order, nil when it
// has none.
func secrets[T text](q T, m Mode) []span {
	l := lexer[T]{q: q, mode: m}
	if !mayHoldSecrets(&l) {
		return nil
	}
	if m&Unsure == 0 || !hasBackslash(q) {
		return scan(q, m&^Unsure)
	}
	spans := scan(q, 0)
	spans = union(spans, scan(q, NoBackslashEscapes))
	return union(spans, scan(q, ANSIQuotes))
}

func scan[T text](q T, m Mode) []span {
	s := scanner[T]{l: lexer[T]{q: q, mode: m}}
	s.run()
	return s.spans
}

func hasBackslash[T text](q T) bool {
	for i := 0; i < len(q); i++ {
		if q[i] == '\\' {
			return true
		}
	}
	return false
}

// union merges two ordered span lists into one, spans that overlap or
// touch becoming one.
func union(a, b []span) []span {
	if len(b) == 0 {
		return a
	}
	all := make([]span, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		var next span
		if len(b) == 0 || len(a) > 0 && a[0].start <= b[0].start {
			next, a = a[0], a[1:]
		} else {
			next, b = b[0], b[1:]
		}
		if n := len(all); n > 0 && next.start <= all[n-1].end {
			all[n-1].end = max(all[n-1].end, next.end)
			continue
		}
		all = append(all, next)
	}
	return all
}

// mayHoldSecrets is the fast check: the statement's first keyword (after
// blanks, comments and opening parentheses) starts a credential statement
// or a stored program or compound statement that may hold one.
func mayHoldSecrets[T text](l *lexer[T]) bool {
	t := l.next()
	for t.kind == punct && l.q[t.start] == '(' {
		t = l.next()
	}
	q := l.q
	switch {
	case is(q, t, "CREATE"), is(q, t, "ALTER"), is(q, t, "SET"), is(q, t, "GRANT"),
		is(q, t, "CHANGE"), is(q, t, "START"):
		return true
	case is(q, t, "BEGIN"): // BEGIN NOT ATOMIC ... END, not the transaction's BEGIN
		return is(q, l.next(), "NOT")
	}
	return false
}
