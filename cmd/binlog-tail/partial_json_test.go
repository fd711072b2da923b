package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// TestTailPartialJSON: binlog-tail writes a MySQL partial JSON update's
// after image with the whole document (the diffs applied to the before
// image), never the diff; a partial update whose before image lacks the
// column (binlog_row_image MINIMAL) stops the run with an error naming it.
func TestTailPartialJSON(t *testing.T) {
	tbl := th.Table{ID: 31, Schema: "app", Name: "docs", PrimaryKey: []int{0}, Columns: []th.Column{
		{Name: "id", Type: th.Int}, {Name: "doc", Type: th.JSON}}}
	b := th.NewBuilder(th.MySQL)
	b.Txn(func(x *th.Txn) { x.Insert(tbl, th.Row{int32(1), `{"a":1,"list":[1,2]}`}) })
	b.Txn(func(x *th.Txn) {
		x.PartialUpdate(tbl, th.Row{int32(1), `{"a":1,"list":[1,2]}`},
			th.Row{int32(1), th.JSONDiffs{th.JSONReplace("$.a", `2`), th.JSONInsert("$.list[2]", `3`), th.JSONInsert("$.b", `"x"`)}})
	})
	good := b.Build()
	b.Txn(func(x *th.Txn) {
		x.PartialUpdate(tbl, th.Row{int32(1), th.Absent}, th.Row{int32(1), th.JSONDiffs{th.JSONRemove("$.b")}})
	})
	bad := b.Build()

	run := func(bl *th.Binlog) (string, error) {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		_, err := tail(context.Background(), path, tailConfig{Source: th.NewFakeSource(bl),
			Start:  binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}),
			Target: binlogstream.Position{File: bl.Files[0].Name, Offset: uint64(bl.Events[len(bl.Events)-1].End)}})
		out, rerr := os.ReadFile(path)
		require.NoError(t, rerr)
		return string(out), err
	}
	out, err := run(good)
	require.NoError(t, err)
	var update string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, `{"type":"update"`) {
			update = l
		}
	}
	assert.Contains(t, update, `"row":{"id":1,"doc":"{\"a\":2,\"b\":\"x\",\"list\":[1,2,3]}"},"before":{"id":1,"doc":"{\"a\":1,\"list\":[1,2]}"}`)
	assert.NotContains(t, out, "json_diff")

	_, err = run(bad)
	require.Error(t, err)
	assert.ErrorIs(t, err, binlogstream.ErrPartialJSONNoBefore)
	assert.Contains(t, err.Error(), "binlog_row_image=FULL")
}
