package clikit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
)

// ServerTables is what a server says about its tables, for checking the
// --tables patterns against them.
type ServerTables struct {
	// LowerCase is lower_case_table_names: 0 compares database and table
	// names as written, 1 and 2 lowercased.
	LowerCase int
	// Schemas are the databases and Tables the tables (views too), the
	// system databases left out, in name order.
	Schemas []string
	Tables  [][2]string
}

// ReadServerTables connects to d and reads its tables.
func ReadServerTables(ctx context.Context, d binlogstream.DSN) (ServerTables, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := d.Connect(cctx)
	if err != nil {
		return ServerTables{}, err
	}
	defer func() { _ = sqlconn.Close(c) }()
	return QueryServerTables(c)
}

// QueryServerTables reads c's tables.
func QueryServerTables(c *client.Conn) (ServerTables, error) {
	var st ServerTables
	r, err := c.Execute("SELECT @@lower_case_table_names")
	if err != nil {
		return st, fmt.Errorf("reading lower_case_table_names: %w", err)
	}
	n, err := r.GetInt(0, 0)
	if err != nil {
		return st, fmt.Errorf("reading lower_case_table_names: %w", err)
	}
	st.LowerCase = int(n)
	system := "('mysql', 'information_schema', 'performance_schema', 'sys')"
	if r, err = c.Execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN " + system + " ORDER BY 1"); err != nil {
		return st, fmt.Errorf("listing databases: %w", err)
	}
	for i := range r.RowNumber() {
		s, _ := r.GetString(i, 0)
		st.Schemas = append(st.Schemas, strings.Clone(s))
	}
	if r, err = c.Execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN " + system + " ORDER BY 1, 2"); err != nil {
		return st, fmt.Errorf("listing tables: %w", err)
	}
	for i := range r.RowNumber() {
		s, _ := r.GetString(i, 0)
		t, _ := r.GetString(i, 1)
		st.Tables = append(st.Tables, [2]string{strings.Clone(s), strings.Clone(t)})
	}
	return st, nil
}

// Patterns is pats comparing names as the server does: lowercased when
// lower_case_table_names is 1 or 2, as written when it is 0.
func (st ServerTables) Patterns(pats binlogstream.TablePatterns) binlogstream.TablePatterns {
	if st.LowerCase != 0 {
		return pats.FoldCase()
	}
	return pats
}

// TablesLaterFlag is the flag that lets a --tables pattern name tables
// that do not exist yet.
const TablesLaterFlag = "--tables-created-later"

// CheckTables checks each --tables pattern of pats (as Patterns returns
// them) against the server's tables. A pattern that matches none is
// refused when it names one table (no wildcard), or when no database
// matches its schema part; a wildcard pattern over a database that
// exists may be waiting for tables created later, and is a warning.
// With later (TablesLaterFlag) every such pattern is a warning. The
// error names each refused pattern and the tables near it.
func (st ServerTables) CheckTables(pats binlogstream.TablePatterns, later bool) (warnings []string, err error) {
	var refused []string
	for _, p := range pats.Split() {
		if slices.ContainsFunc(st.Tables, func(t [2]string) bool { return p.Match(t[0], t[1]) }) {
			continue
		}
		schemaExists := slices.ContainsFunc(st.Schemas, p.MatchSchema)
		if later || !p.Literal() && schemaExists {
			warnings = append(warnings, fmt.Sprintf("--tables %s matches no table yet: the tables created later that it matches are streamed", p))
			continue
		}
		refused = append(refused, fmt.Sprintf("%s matches no table (%s)", p, st.near(p, schemaExists)))
	}
	if len(refused) > 0 {
		return warnings, fmt.Errorf("--tables %s: name tables that exist, as the server spells them, or add %s if they are created after the start",
			strings.Join(refused, "; "), TablesLaterFlag)
	}
	return warnings, nil
}

// near says what exists near p, which matches no table: the tables it
// matches but for case, else the tables of its databases, else the
// databases it matches but for case.
func (st ServerTables) near(p binlogstream.TablePatterns, schemaExists bool) string {
	const most = 5
	list := func(names []string) string {
		if len(names) > most {
			return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
		}
		return strings.Join(names, ", ")
	}
	folded := p.FoldCase()
	var cased []string
	for _, t := range st.Tables {
		if folded.Match(t[0], t[1]) {
			cased = append(cased, t[0]+"."+t[1])
		}
	}
	if len(cased) > 0 && st.LowerCase == 0 {
		return fmt.Sprintf("but for case it matches %s: this server compares names as written, lower_case_table_names=0", list(cased))
	}
	if schemaExists {
		var in, full []string
		var schema string
		schemas := map[string]bool{}
		for _, t := range st.Tables {
			if p.MatchSchema(t[0]) {
				in, full = append(in, t[1]), append(full, t[0]+"."+t[1])
				schemas[t[0]], schema = true, t[0]
			}
		}
		switch {
		case len(in) == 0:
			return "its database has no table"
		case len(schemas) > 1:
			return "its databases hold " + list(full)
		default:
			return schema + " holds " + list(in)
		}
	}
	var dbs []string
	for _, s := range st.Schemas {
		if folded.MatchSchema(s) {
			dbs = append(dbs, s)
		}
	}
	if len(dbs) > 0 && st.LowerCase == 0 {
		return fmt.Sprintf("no database matches it; but for case %s does: this server compares names as written, lower_case_table_names=0", list(dbs))
	}
	return "no database matches it"
}
