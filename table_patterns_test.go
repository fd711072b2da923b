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
