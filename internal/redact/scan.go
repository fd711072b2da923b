package redact

// scanner walks a statement that may hold secrets and records the spans of
// the literals that are secrets. It reads clause shapes, not whole
// statements, so a secret is found wherever its clause appears: in each
// user of a CREATE USER, inside a stored program's body, after MariaDB's
// SET STATEMENT ... FOR.
type scanner[T text] struct {
	l     lexer[T]
	spans []span
	prev  token
	// setPassword: inside SET PASSWORD, where every literal after its
	// '=' is a password, a hash or (REPLACE) the current password.
	setPassword, afterEq bool
	// server: inside CREATE/ALTER SERVER, whose OPTIONS are read.
	server bool
}

func (s *scanner[T]) run() {
	q := s.l.q
	for {
		t := s.l.next()
		switch {
		case t.kind == end:
			return
		case s.isPunct(t, ';'):
			s.setPassword, s.afterEq, s.server = false, false, false
		case s.isPunct(t, '='):
			s.afterEq = s.setPassword
		case s.afterEq && isLiteral(t):
			s.maskFrom(t)
		case is(q, t, "IDENTIFIED"):
			s.identified()
		case is(q, t, "PASSWORD"):
			if is(q, s.prev, "SET") {
				s.setPassword = true
			}
			s.password()
		case is(q, t, "OLD_PASSWORD"), hasSuffix(q, t, "_PASSWORD"): // MASTER_PASSWORD, SOURCE_PASSWORD
			s.password()
		case is(q, t, "REPLACE"): // ALTER USER / SET PASSWORD ... REPLACE 'current'
			s.literal()
		case is(q, t, "CHALLENGE_RESPONSE"): // MySQL's FINISH REGISTRATION SET CHALLENGE_RESPONSE AS '...'
			if is(q, s.l.peek(), "AS") {
				s.l.next()
				s.literal()
			}
		case is(q, t, "CONNECTION"):
			s.connection()
		case is(q, t, "SERVER"):
			s.server = true
		case is(q, t, "OPTIONS") && s.server:
			s.options()
		}
		s.prev = t
	}
}

// identified reads an authentication option after IDENTIFIED:
//
//	BY 'password' | BY PASSWORD 'hash' | BY RANDOM PASSWORD
//	{WITH|VIA} plugin [{BY|AS|USING} {'string' | PASSWORD('password') | RANDOM PASSWORD}] [OR plugin ...]
func (s *scanner[T]) identified() {
	q := s.l.q
	switch t := s.l.next(); {
	case is(q, t, "BY"):
		s.authString()
	case is(q, t, "WITH"), is(q, t, "VIA"):
		for {
			if s.l.next().kind == end { // the plugin's name
				return
			}
			if p := s.l.peek(); is(q, p, "BY") || is(q, p, "AS") || is(q, p, "USING") {
				s.l.next()
				s.authString()
			}
			if !is(q, s.l.peek(), "OR") {
				return
			}
			s.l.next()
		}
	}
}

// authString masks what follows BY, AS or USING of an authentication
// option: a literal, PASSWORD 'hash', PASSWORD('password'); RANDOM
// PASSWORD has none.
func (s *scanner[T]) authString() {
	q := s.l.q
	switch p := s.l.peek(); {
	case is(q, p, "PASSWORD"), is(q, p, "OLD_PASSWORD"):
		s.prev = s.l.next()
		s.password()
	case is(q, p, "RANDOM"):
		s.l.next()
		if is(q, s.l.peek(), "PASSWORD") {
			s.l.next()
		}
	default:
		s.literal()
	}
}

// password masks what follows a PASSWORD word: the arguments of
// PASSWORD(...) (and OLD_PASSWORD), the value of PASSWORD = '...' (SET
// PASSWORD, START SLAVE, MASTER_PASSWORD) or of PASSWORD '...' (a
// server's option, IDENTIFIED BY PASSWORD).
func (s *scanner[T]) password() {
	switch p := s.l.peek(); {
	case s.isPunct(p, '('):
		s.l.next()
		s.parens()
	case s.isPunct(p, '='):
		s.l.next()
		s.afterEq = s.setPassword
		s.literal()
	default:
		s.literal()
	}
}

// parens masks every literal up to the ')' that closes the '(' just read.
func (s *scanner[T]) parens() {
	for depth := 1; ; {
		t := s.l.next()
		switch {
		case t.kind == end:
			return
		case s.isPunct(t, '('):
			depth++
		case s.isPunct(t, ')'):
			if depth--; depth == 0 {
				return
			}
		case isLiteral(t):
			s.maskFrom(t)
		}
	}
}

// safeOptions are the options of CREATE/ALTER SERVER that hold no secret;
// every other option's value (PASSWORD, and those MariaDB 11.7 lets a
// wrapper define) is masked.
var safeOptions = [...]string{"HOST", "DATABASE", "USER", "SOCKET", "OWNER", "PORT", "WRAPPER"}

// options reads a server's OPTIONS (name value, ...).
func (s *scanner[T]) options() {
	if !s.isPunct(s.l.peek(), '(') {
		return
	}
	s.l.next()
	q := s.l.q
	for {
		name := s.l.next()
		switch {
		case name.kind == end, s.isPunct(name, ')'):
			return
		case name.kind != word:
			continue
		}
		safe := false
		for _, o := range safeOptions {
			safe = safe || is(q, name, o)
		}
		if safe {
			continue
		}
		s.literal()
	}
}

// connection masks a FEDERATED table's CONNECTION [=] 'url' when the URL
// has a user part (scheme://user:password@host/...), which may hold the
// password; a server's name stays.
func (s *scanner[T]) connection() {
	if s.isPunct(s.l.peek(), '=') {
		s.l.next()
	}
	p := s.l.peek()
	if p.kind != str {
		return
	}
	for i := p.start; i < p.end; i++ {
		if s.l.q[i] == '@' {
			s.literal()
			return
		}
	}
}

// literal masks the next token when it is a literal.
func (s *scanner[T]) literal() {
	p := s.l.peek()
	if p.kind == word && s.l.q[p.start] == '_' { // a charset introducer: _utf8mb4'...'
		save, exec := s.l.i, s.l.exec
		s.l.next()
		if p = s.l.peek(); !isLiteral(p) {
			s.l.i, s.l.exec = save, exec
			return
		}
	}
	if isLiteral(p) {
		s.maskFrom(s.l.next())
	}
}

// maskFrom masks literal t, just read, with the literals right after it
// ('a' 'b' is one literal, 'ab'): one Mask for them all, so that no two
// masks touch and read back as one string with a doubled quote.
func (s *scanner[T]) maskFrom(t token) {
	sp := span{t.start, t.end}
	for isLiteral(s.l.peek()) {
		sp.end = s.l.next().end
	}
	if n := len(s.spans); n > 0 && s.spans[n-1].end >= sp.start {
		s.spans[n-1].end = max(s.spans[n-1].end, sp.end)
		return
	}
	s.spans = append(s.spans, sp)
}

func (s *scanner[T]) isPunct(t token, c byte) bool {
	return t.kind == punct && s.l.q[t.start] == c
}

func isLiteral(t token) bool { return t.kind == str || t.kind == number }
