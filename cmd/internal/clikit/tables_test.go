package clikit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// TestCheckTables: a literal pattern or one over no database that
// matches no table is refused, naming what is near; a wildcard one over
// a database that exists is a warning; --tables-created-later makes
// every refusal a warning; the server's lower_case_table_names decides
// whether case counts.
func TestCheckTables(t *testing.T) {
	st := ServerTables{Schemas: []string{"app", "empty", "other"},
		Tables: [][2]string{{"app", "big"}, {"app", "orders"}, {"other", "x"}}}
	for _, c := range []struct {
		tables   string
		lower    int
		refused  string // "" when accepted
		warnings int
	}{
		{tables: "app.big"},
		{tables: "`app`.`big`"},
		{tables: "app.*,*.x"},
		{tables: "APP.BIG", lower: 1},
		{tables: "APP.BIG", lower: 2},
		{tables: "app.nosuch", refused: "--tables app.nosuch matches no table (app holds big, orders): name tables that exist, as the server spells them, or add --tables-created-later"},
		{tables: "APP.BIG", refused: "APP.BIG matches no table (but for case it matches app.big: this server compares names as written, lower_case_table_names=0)"},
		{tables: "`app`.`Big`", refused: "`app`.`Big` matches no table (but for case it matches app.big:"},
		{tables: "app.big,app.nosuch", refused: "--tables app.nosuch matches no table"},
		{tables: "app.nosuch,empty.t", refused: "app.nosuch matches no table (app holds big, orders); empty.t matches no table (its database has no table)"},
		{tables: "nosuch.*", refused: "nosuch.* matches no table (no database matches it)"},
		{tables: "App.*", refused: "App.* matches no table (but for case it matches app.big, app.orders:"},
		{tables: "Empty.*", refused: "Empty.* matches no table (no database matches it; but for case empty does: "},
		{tables: "app.audit_*", warnings: 1},
		{tables: "*.audit", warnings: 1},
		{tables: "empty.*", warnings: 1},
	} {
		pats, err := binlogstream.ParseTablePatterns(c.tables)
		require.NoError(t, err)
		st.LowerCase = c.lower
		pats = st.Patterns(pats)
		warnings, err := st.CheckTables(pats, false)
		if c.refused != "" {
			assert.ErrorContains(t, err, c.refused, c.tables)
			// The flag for tables created later turns it into a warning.
			warnings, err = st.CheckTables(pats, true)
			assert.NoError(t, err, c.tables)
			assert.NotEmpty(t, warnings, c.tables)
			continue
		}
		assert.NoError(t, err, c.tables)
		assert.Len(t, warnings, c.warnings, c.tables)
	}
	pats, _ := binlogstream.ParseTablePatterns("app.audit_*")
	w, _ := st.CheckTables(pats, false)
	assert.Equal(t, []string{"--tables app.audit_* matches no table yet: the tables created later that it matches are streamed"}, w)

	many := ServerTables{Schemas: []string{"a"}}
	for _, n := range []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7"} {
		many.Tables = append(many.Tables, [2]string{"a", n})
	}
	pats, _ = binlogstream.ParseTablePatterns("a.t8")
	_, err := many.CheckTables(pats, false)
	assert.ErrorContains(t, err, "(a holds t1, t2, t3, t4, t5 and 2 more)")
}
