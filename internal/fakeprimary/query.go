package fakeprimary

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

func lower(s string) string { return strings.ToLower(s) }

// executed is the GTID set of every transaction in bl, memoised per
// binlog: go-mysql asks for variables several times per connection.
func (p *Primary) executed(bl *binlogbuild.Binlog) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.execFor != bl || p.execLen != len(bl.Events) {
		p.execFor, p.execLen, p.execSet = bl, len(bl.Events), bl.ExecutedBefore(len(bl.Events)).String()
	}
	return p.execSet
}

// variables are the server variables as SELECT @@name and SHOW VARIABLES
// see them: derived from the served binlog, then SetVar and UnsetVar.
func (p *Primary) variables() map[string]string {
	p.mu.Lock()
	bl, purged := p.bl, p.purged
	over := make(map[string]string, len(p.overrides))
	for k, v := range p.overrides {
		over[k] = v
	}
	unset := make(map[string]bool, len(p.unset))
	for k := range p.unset {
		unset[k] = true
	}
	p.mu.Unlock()

	checksum := "NONE"
	if bl.Checksum {
		checksum = "CRC32"
	}
	executed := p.executed(bl)
	v := map[string]string{
		"server_id":            strconv.FormatUint(uint64(bl.ServerID), 10),
		"version":              binlogbuild.ServerVersion(bl.Flavor),
		"binlog_checksum":      checksum,
		"binlog_format":        "ROW",
		"binlog_row_image":     "FULL",
		"log_bin":              "1",
		"log_slave_updates":    "1",
		"read_only":            "0",
		"character_set_server": "utf8mb4",
	}
	if bl.Flavor == binlogbuild.MariaDB {
		domain := "0"
		for _, e := range bl.Events {
			if e.GTID != "" {
				domain, _, _ = strings.Cut(e.GTID, "-")
			}
		}
		v["version_comment"] = "mariadb.org binary distribution"
		v["gtid_binlog_pos"] = executed
		v["gtid_current_pos"] = executed
		v["gtid_slave_pos"] = ""
		v["gtid_strict_mode"] = "0"
		v["gtid_domain_id"] = domain
	} else {
		uuid := binlogbuild.DefaultUUID
		for _, e := range bl.Events {
			if u, _, ok := strings.Cut(e.GTID, ":"); ok {
				uuid = u
				break
			}
		}
		gtidMode := "ON"
		if bl.Anonymous {
			gtidMode = "OFF"
		}
		v["version_comment"] = "MySQL Community Server - GPL"
		v["server_uuid"] = uuid
		v["super_read_only"] = "0"
		v["log_replica_updates"] = "1"
		v["gtid_mode"] = gtidMode
		v["enforce_gtid_consistency"] = gtidMode
		v["gtid_executed"] = executed
		v["gtid_purged"] = bl.Files[min(purged, len(bl.Files)-1)].StartGTIDs
		v["binlog_transaction_compression"] = "OFF"
	}
	for k, val := range over {
		v[k] = val
	}
	for k := range unset {
		delete(v, k)
	}
	return v
}

var (
	reKill     = regexp.MustCompile(`(?i)^KILL\s+(?:CONNECTION\s+|QUERY\s+)?(\d+)$`)
	reShowVars = regexp.MustCompile(`(?i)^SHOW\s+(?:GLOBAL\s+|SESSION\s+)?VARIABLES(?:\s+(LIKE|WHERE)\s+(.*))?$`)
	reQuoted   = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"`)
	reAlias    = regexp.MustCompile(`(?i)^(.*?)\s+AS\s+` + "`?" + `([A-Za-z0-9_@.]+)` + "`?" + `$`)
	reSysVar   = regexp.MustCompile(`(?i)^@@(?:(?:global|session|local)\.)?([A-Za-z0-9_]+)$`)
	reUserVar  = regexp.MustCompile(`^@([A-Za-z0-9_]+)$`)
	reSpaces   = regexp.MustCompile(`\s+`)
)

// query answers one COM_QUERY.
func (c *conn) query(q string) (*mysql.Result, error) {
	s := strings.TrimSpace(q)
	s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	up := strings.ToUpper(reSpaces.ReplaceAllString(s, " "))
	if strings.HasPrefix(up, "SELECT ") && c.p.tables.has() {
		if r, ok, err := c.p.tables.query(s); ok {
			return r, err
		}
	}
	switch {
	case strings.HasPrefix(up, "SET "):
		c.set(s[4:])
		return nil, nil
	case reKill.MatchString(s):
		id, _ := strconv.ParseUint(reKill.FindStringSubmatch(s)[1], 10, 32)
		target := c.p.byID(uint32(id))
		if target == nil {
			return nil, mysql.NewDefaultError(mysql.ER_NO_SUCH_THREAD, id)
		}
		target.kill()
		return nil, nil
	case up == "SHOW MASTER STATUS" && c.p.mysql84():
		return nil, mysql.NewError(mysql.ER_PARSE_ERROR, "You have an error in your SQL syntax near 'MASTER STATUS'")
	case up == "SHOW MASTER STATUS" || up == "SHOW BINARY LOG STATUS":
		return c.masterStatus()
	case isTxnStatement(up):
		return nil, nil
	case up == "SHOW BINARY LOGS" || up == "SHOW MASTER LOGS":
		return c.binaryLogs()
	case reShowVars.MatchString(s):
		m := reShowVars.FindStringSubmatch(s)
		return c.showVariables(strings.ToUpper(m[1]), m[2])
	case strings.HasPrefix(up, "SELECT "):
		return c.selectExprs(strings.TrimSpace(s[len("SELECT "):]))
	}
	return nil, mysql.NewError(mysql.ER_PARSE_ERROR, "fakeprimary does not understand: "+q)
}

// set records SET @name = value (user variables, as a replica sets them)
// and accepts anything else (SET NAMES, session variables) silently.
func (c *conn) set(assignments string) {
	for _, a := range splitTop(assignments) {
		lhs, rhs, ok := strings.Cut(a, "=")
		if !ok {
			continue
		}
		lhs = strings.TrimSpace(lhs)
		if !strings.HasPrefix(lhs, "@") || strings.HasPrefix(lhs, "@@") {
			continue
		}
		c.userVars[lower(lhs[1:])] = unquote(strings.TrimSpace(rhs))
	}
}

// selectExprs answers SELECT of system variables, user variables and
// literals, one column per expression named as written (or its alias).
func (c *conn) selectExprs(list string) (*mysql.Result, error) {
	if i := strings.Index(strings.ToUpper(list), " FROM INFORMATION_SCHEMA."); i >= 0 {
		// The fake primary has no tables of its own: its information_schema
		// answers every query with no rows (its Table_maps log FULL metadata).
		var names []string
		for _, expr := range splitTop(list[:i]) {
			names = append(names, strings.TrimSpace(expr))
		}
		return resultset(names, nil)
	}
	if strings.Contains(strings.ToUpper(list), " FROM ") {
		return nil, mysql.NewError(mysql.ER_PARSE_ERROR, "fakeprimary does not understand SELECT ... FROM")
	}
	vars := c.p.variables()
	var names []string
	var row []any
	for _, expr := range splitTop(list) {
		expr = strings.TrimSpace(expr)
		name := expr
		if m := reAlias.FindStringSubmatch(expr); m != nil {
			expr, name = strings.TrimSpace(m[1]), m[2]
		}
		var val any
		switch {
		case reSysVar.MatchString(expr):
			v := lower(reSysVar.FindStringSubmatch(expr)[1])
			s, ok := vars[v]
			if !ok {
				return nil, mysql.NewDefaultError(mysql.ER_UNKNOWN_SYSTEM_VARIABLE, v)
			}
			val = typed(s)
		case reUserVar.MatchString(expr):
			if s, ok := c.userVars[lower(expr[1:])]; ok {
				val = s
			}
		case strings.EqualFold(expr, "VERSION()"):
			val = vars["version"]
		case strings.EqualFold(expr, "CONNECTION_ID()"):
			val = int64(c.id.Load())
		case reQuoted.MatchString(expr) && reQuoted.FindString(expr) == expr:
			val = unquote(expr)
		default:
			n, err := strconv.ParseInt(expr, 10, 64)
			if err != nil {
				return nil, mysql.NewError(mysql.ER_PARSE_ERROR, "fakeprimary does not understand: SELECT "+list)
			}
			val = n
		}
		names = append(names, name)
		row = append(row, val)
	}
	return resultset(names, [][]any{row})
}

// showVariables answers SHOW [GLOBAL] VARIABLES [LIKE 'pat' | WHERE
// Variable_name IN ('a', ...) | WHERE Variable_name = 'a'].
func (c *conn) showVariables(kind, arg string) (*mysql.Result, error) {
	vars := c.p.variables()
	var match func(string) bool
	switch kind {
	case "LIKE":
		pat := likeRegexp(unquote(strings.TrimSpace(arg)))
		match = pat.MatchString
	case "WHERE":
		want := map[string]bool{}
		for _, m := range reQuoted.FindAllString(arg, -1) {
			want[lower(unquote(m))] = true
		}
		match = func(n string) bool { return want[n] }
	default:
		match = func(string) bool { return true }
	}
	var names []string
	for n := range vars {
		if match(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	rows := make([][]any, 0, len(names))
	for _, n := range names {
		rows = append(rows, []any{n, vars[n]})
	}
	return resultset([]string{"Variable_name", "Value"}, rows)
}

// masterStatus is SHOW MASTER STATUS / SHOW BINARY LOG STATUS: the end of
// the newest file (no row when log_bin is off).
func (c *conn) masterStatus() (*mysql.Result, error) {
	vars := c.p.variables()
	bl := c.p.Binlog()
	cols := []string{"File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB"}
	if bl.Flavor == binlogbuild.MySQL {
		cols = append(cols, "Executed_Gtid_Set")
	}
	var rows [][]any
	if vars["log_bin"] == "1" || strings.EqualFold(vars["log_bin"], "ON") {
		last := bl.Files[len(bl.Files)-1]
		row := []any{last.Name, uint64(len(last.Data)), "", ""}
		if bl.Flavor == binlogbuild.MySQL {
			row = append(row, vars["gtid_executed"])
		}
		rows = append(rows, row)
	}
	return resultset(cols, rows)
}

// binaryLogs is SHOW BINARY LOGS: the files not purged, with their sizes.
func (c *conn) binaryLogs() (*mysql.Result, error) {
	bl := c.p.Binlog()
	c.p.mu.Lock()
	first := min(c.p.purged, len(bl.Files)-1)
	c.p.mu.Unlock()
	cols := []string{"Log_name", "File_size"}
	if bl.Flavor == binlogbuild.MySQL {
		cols = append(cols, "Encrypted")
	}
	var rows [][]any
	for _, f := range bl.Files[first:] {
		row := []any{f.Name, uint64(len(f.Data))}
		if bl.Flavor == binlogbuild.MySQL {
			row = append(row, "No")
		}
		rows = append(rows, row)
	}
	return resultset(cols, rows)
}

func resultset(names []string, rows [][]any) (*mysql.Result, error) {
	r, err := mysql.BuildSimpleTextResultset(names, rows)
	if err != nil {
		return nil, fmt.Errorf("fakeprimary: %w", err)
	}
	return mysql.NewResult(r), nil
}

// typed makes integer values integers, as the server types @@read_only.
func typed(s string) any {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	return s
}

// splitTop splits s at commas outside quotes and parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == '\\' {
				i++
			} else if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"' || ch == '`':
			quote = ch
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case ch == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unquote strips one level of SQL quotes ('x', "x") and backslash escapes.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		s = s[1 : len(s)-1]
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		return b.String()
	}
	return s
}

// likeRegexp turns a LIKE pattern into a case-insensitive regexp.
func likeRegexp(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?i)^")
	for _, r := range pat {
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
