package redact

// The lexer splits statement text into the tokens the masker reads,
// skipping blanks and comments. It works on string or []byte alike and
// allocates nothing.

type kind uint8

const (
	end    kind = iota
	word        // a bare word, a keyword or an identifier (`quoted` too)
	str         // '...' or "...", X'..', B'..', N'..'
	number      // digits, 0x.., 0b..
	punct       // one byte of anything else
)

type token struct {
	kind       kind
	start, end int // q[start:end] is the token's text
}

type text interface{ ~string | ~[]byte }

type lexer[T text] struct {
	q    T
	i    int
	mode Mode
	// exec counts the executable comments (/*! or /*M!) open: the
	// server runs their text, so it is read as code and only their
	// closing */ is skipped.
	exec int
}

// next returns the token at the lexer's position and moves past it.
func (l *lexer[T]) next() token {
	l.skip()
	q, i := l.q, l.i
	if i >= len(q) {
		return token{kind: end, start: i, end: i}
	}
	c := q[i]
	t := token{start: i}
	switch {
	case c == '\'' || c == '"':
		t.kind, t.end = str, l.quoted(i, c)
	case c == '`':
		t.kind, t.end = word, l.quoted(i, c)
	case (c == 'x' || c == 'X' || c == 'b' || c == 'B' || c == 'n' || c == 'N') && i+1 < len(q) && (q[i+1] == '\'' || q[i+1] == '"'):
		// X'..', B'..', N'..'; with " too, which no server takes but
		// which a masked "..." right after such a letter would become
		t.kind, t.end = str, l.quoted(i+1, q[i+1])
	case isDigit(c):
		j := i + 1
		for j < len(q) && isWordByte(q[j]) {
			j++
		}
		t.kind, t.end = number, j
	case isWordByte(c):
		j := i + 1
		for j < len(q) && (isWordByte(q[j]) || q[j] == '$') {
			j++
		}
		t.kind, t.end = word, j
	default:
		t.kind, t.end = punct, i+1
	}
	l.i = t.end
	return t
}

// peek returns the next token without moving past it.
func (l *lexer[T]) peek() token {
	save, exec := l.i, l.exec
	t := l.next()
	l.i, l.exec = save, exec
	return t
}

// quoted returns the end of the quoted text whose opening quote is at
// q[at]: a doubled quote stands for one, and a backslash escapes the next
// byte in '...' and "..." strings unless the mode says otherwise. An
// unclosed quote runs to the end of the text.
func (l *lexer[T]) quoted(at int, quote byte) int {
	q := l.q
	backslash := quote != '`' && l.mode&NoBackslashEscapes == 0 && !(quote == '"' && l.mode&ANSIQuotes != 0)
	for j := at + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			if backslash {
				j++
			}
		case quote:
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

// skip moves past blanks, comments, the openers of executable comments
// and their closers.
func (l *lexer[T]) skip() {
	q := l.q
	for l.i < len(q) {
		i := l.i
		switch c := q[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.i++
		case c == '#' || c == '-' && i+2 < len(q) && q[i+1] == '-' && isSpace(q[i+2]) ||
			c == '-' && i+2 == len(q) && q[i+1] == '-':
			for l.i < len(q) && q[l.i] != '\n' {
				l.i++
			}
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := i + 2
			switch {
			case j < len(q) && q[j] == '!':
				j++
			case j+1 < len(q) && q[j] == 'M' && q[j+1] == '!':
				j += 2
			default:
				l.i = closeComment(q, j)
				continue
			}
			for j < len(q) && isDigit(q[j]) { // the version it runs from
				j++
			}
			l.exec++
			l.i = j
		case c == '*' && l.exec > 0 && i+1 < len(q) && q[i+1] == '/':
			l.exec--
			l.i += 2
		default:
			return
		}
	}
}

// closeComment returns the position after the */ that closes a comment
// whose text starts at q[from], or the end of q.
func closeComment[T text](q T, from int) int {
	for j := from; j+1 < len(q); j++ {
		if q[j] == '*' && q[j+1] == '/' {
			return j + 2
		}
	}
	return len(q)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isWordByte: bytes of bare words, multi-byte UTF-8 letters included.
func isWordByte(c byte) bool {
	return c == '_' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// is reports whether token t is the keyword kw (upper case), in any case.
func is[T text](q T, t token, kw string) bool {
	if t.kind != word || t.end-t.start != len(kw) {
		return false
	}
	for k := 0; k < len(kw); k++ {
		c := q[t.start+k]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != kw[k] {
			return false
		}
	}
	return true
}

// hasSuffix reports whether word t ends with suffix (upper case), in any
// case, with more before it.
func hasSuffix[T text](q T, t token, suffix string) bool {
	if t.kind != word || t.end-t.start <= len(suffix) {
		return false
	}
	return is(q, token{kind: word, start: t.end - len(suffix), end: t.end}, suffix)
}
