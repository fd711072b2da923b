package binlogbuild_test

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

// TestJSONColumnThroughGoMySQL: go-mysql decodes what the encoder writes
// for a JSON column: whole documents (keys come back in MySQL's order in
// its MySQL-text mode), a PARTIAL_UPDATE_ROWS_EVENT with a before image
// left out, and the after image's diff vector, of which go-mysql v1.16.0
// keeps only the first diff.
func TestJSONColumnThroughGoMySQL(t *testing.T) {
	tbl := binlogbuild.Table{ID: 5, Schema: "app", Name: "docs", Columns: []binlogbuild.Column{
		{Name: "id", Type: binlogbuild.Int}, {Name: "doc", Type: binlogbuild.JSON}, {Name: "other", Type: binlogbuild.JSON}}}
	docs := []string{`{"b":1,"aa":[1,-2,3.5,"s"],"ccc":{"x":null,"y":true}}`, `[]`, `"str"`, `12`, `null`, `{"big":18446744073709551615,"neg":-4294967296}`}
	b := binlogbuild.NewBuilder(binlogbuild.MySQL)
	b.Txn(func(x *binlogbuild.Txn) {
		for i, d := range docs {
			x.Insert(tbl, binlogbuild.Row{int32(i), d, nil})
		}
		x.PartialUpdate(tbl,
			binlogbuild.Row{int32(0), binlogbuild.Absent, `{"k":1}`},
			binlogbuild.Row{int32(0), binlogbuild.JSONDiffs{binlogbuild.JSONReplace("$.b", `2`), binlogbuild.JSONRemove("$.aa[0]")}, `{"k":2}`})
	})
	bl := b.Build()
	p := newParser(binlogbuild.MySQL)
	p.SetRenderJSONAsMySQLText(true)
	var rows [][]any
	var partial *replication.RowsEvent
	for _, info := range bl.Events {
		ev, err := p.Parse(bl.Files[0].Data[info.Start:info.End])
		require.NoError(t, err, "%v", info)
		if re, ok := ev.Event.(*replication.RowsEvent); ok {
			if info.Type == replication.PARTIAL_UPDATE_ROWS_EVENT {
				partial = re
				continue
			}
			rows = append(rows, re.Rows...)
		}
	}
	require.Len(t, rows, len(docs))
	for i, d := range docs {
		assert.Equal(t, d, rows[i][1], "document %d", i)
		assert.Nil(t, rows[i][2])
	}
	require.NotNil(t, partial)
	require.Len(t, partial.Rows, 2)
	assert.Equal(t, []int{1}, partial.SkippedColumns[0], "the before image leaves the column out")
	assert.Equal(t, `{"k":1}`, partial.Rows[0][2])
	diff, ok := partial.Rows[1][1].(*replication.JsonDiff)
	require.True(t, ok, "%T", partial.Rows[1][1])
	assert.Equal(t, replication.JsonDiff{Op: replication.JsonDiffOperationReplace, Path: "$.b", Value: "2"}, *diff,
		"go-mysql reads the first diff; the Remove that follows is not in its value")
	assert.Equal(t, `{"k":2}`, partial.Rows[1][2], "a JSON column logged whole in a partial event")
}
