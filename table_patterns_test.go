package binlogstream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func TestTablePatterns(t *testing.T) {
	p, err := binlogstream.ParseTablePatterns("app.orders, app.order_*,*.audit")
	require.NoError(t, err)
	for _, c := range []struct {
		schema, table string
		want          bool
	}{
		{"app", "orders", true},
		{"app", "order_items", true},
		{"app", "orders2", false},
		{"app", "users", false},
		{"billing", "audit", true},
		{"billing", "audits", false},
		{"App", "orders", false}, // names are compared as the server stores them
	} {
		assert.Equal(t, c.want, p.Match(c.schema, c.table), "%s.%s", c.schema, c.table)
	}
	_, ok := p.Schemas()
	assert.False(t, ok, "*.audit names no fixed schema")

	p, err = binlogstream.ParseTablePatterns("a.t1,b.*,a.t2")
	require.NoError(t, err)
	s, ok := p.Schemas()
	assert.True(t, ok)
	assert.Equal(t, []string{"a", "b"}, s)

	for _, bad := range []string{"", " , ", "orders", "app.", ".orders", "a.b.c", "app.[x"} {
		_, err := binlogstream.ParseTablePatterns(bad)
		assert.Error(t, err, "%q", bad)
	}
	_, err = binlogstream.ParseTablePatterns("orders")
	assert.ErrorContains(t, err, `"orders": want schema.table`)
}

// TestTablePatternsBackquoted: a backquoted part is a name matched as it
// is, dots, commas and wildcards included; a doubled backquote is one.
func TestTablePatternsBackquoted(t *testing.T) {
	for _, c := range []struct {
		list, schema, table string
		want                bool
	}{
		{"`app`.`big`", "app", "big", true},
		{"`app`.`big`", "app", "bigger", false},
		{"`app`.big", "app", "big", true},
		{"app.`big`", "app", "big", true},
		{"`app`.`my.table`", "app", "my.table", true},
		{"`app`.`my.table`", "app", "myxtable", false},
		{"`app`.`a*`", "app", "a*", true},
		{"`app`.`a*`", "app", "ab", false}, // no wildcard in backquotes
		{"`app`.`a?[b]\\`", "app", "a?[b]\\", true},
		{"`app`.`x``y`", "app", "x`y", true},
		{"`a,b`.t, c.d", "a,b", "t", true},
		{"`a,b`.t, c.d", "c", "d", true},
		{"`my.db`.*", "my.db", "anything", true},
		{" `app` . `big` ", "app", "big", false}, // spaces are part of the entry's text: refused below
	} {
		p, err := binlogstream.ParseTablePatterns(c.list)
		if c.list == " `app` . `big` " {
			assert.Error(t, err, "%q", c.list)
			continue
		}
		require.NoError(t, err, "%q", c.list)
		assert.Equal(t, c.want, p.Match(c.schema, c.table), "%q against %s.%s", c.list, c.schema, c.table)
	}

	p, err := binlogstream.ParseTablePatterns("`my.db`.`t`,`x*`.y")
	require.NoError(t, err)
	s, ok := p.Schemas()
	assert.True(t, ok, "backquoted schemas are fixed names")
	assert.Equal(t, []string{"my.db", "x*"}, s)
	assert.Equal(t, "`my.db`.`t`,`x*`.y", p.String())
	assert.True(t, p.Literal())
	for _, list := range []string{"app.*", "*.t", "app.t?", "app.t[12]"} {
		p, err := binlogstream.ParseTablePatterns(list)
		require.NoError(t, err)
		assert.False(t, p.Literal(), list)
	}

	for bad, want := range map[string]string{
		"`app.big":      "backquote at 0 is not closed",
		"app.`big":      "backquote at 4 is not closed",
		"``.t":          "empty name in backquotes",
		"ap`p`.t":       "a backquote inside a name",
		"`app`x.t":      `"x.t" after a backquoted name`,
		"`app`":         "want schema.table",
		"`a`.`b`.`c`":   "backquote a name that holds a dot",
		"app.b.c":       "backquote a name that holds a dot",
		"`app`.":        "want schema.table",
		"app.[x":        "syntax error in pattern",
		"`a`.`b`,`c`.`": "\"`c`.`\": backquote at 4 is not closed",
	} {
		_, err := binlogstream.ParseTablePatterns(bad)
		assert.ErrorContains(t, err, want, "%q", bad)
	}
}

// TestTablePatternsFoldCase: as the server with lower_case_table_names
// 0 compares, names differing in case do not match; folded (1 or 2),
// they do.
func TestTablePatternsFoldCase(t *testing.T) {
	p, err := binlogstream.ParseTablePatterns("APP.Big,`Odd.Name`.x_*")
	require.NoError(t, err)
	assert.False(t, p.Match("app", "big"))
	assert.True(t, p.Match("APP", "Big"))
	f := p.FoldCase()
	for _, n := range [][2]string{{"app", "big"}, {"APP", "BIG"}, {"App", "bIg"}, {"odd.name", "X_1"}} {
		assert.True(t, f.Match(n[0], n[1]), "%s.%s", n[0], n[1])
	}
	assert.False(t, f.Match("app", "bigger"))
	assert.True(t, f.MatchSchema("ODD.NAME"))
	assert.False(t, p.MatchSchema("odd.name"))
	s, ok := f.Schemas()
	assert.True(t, ok)
	assert.Equal(t, []string{"app", "odd.name"}, s)
	assert.Equal(t, "APP.Big,`Odd.Name`.x_*", f.String(), "the patterns as written")
	assert.Len(t, f.Split(), 2)
	assert.Equal(t, "`Odd.Name`.x_*", f.Split()[1].String())
}
