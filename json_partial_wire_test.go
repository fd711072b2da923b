package binlogstream_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// TestPartialJSONOverTheWire: MySQL 8 partial JSON updates
// (PARTIAL_UPDATE_ROWS_EVENT) served by the fake primary over TCP and read
// through the SyncerSource. Each after image's JSON column is the full
// after document, the diffs applied to the before image's document:
// several diffs in one column, nested paths, array insert and remove (of
// the last element too), a key insert that lands in MySQL's key order, a
// quoted member. The same documents written whole in a later UPDATE, as
// go-mysql renders them with RenderJSONAsMySQLText, are the reference. A
// partial update whose before image lacks the column is an error. The
// same again with every transaction in a compressed Transaction_payload.
func TestPartialJSONOverTheWire(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testPartialJSONOverTheWire(t, false) })
	t.Run("transaction-payload", func(t *testing.T) { testPartialJSONOverTheWire(t, true) })
}

func testPartialJSONOverTheWire(t *testing.T, compress bool) {
	tbl := th.Table{ID: 21, Schema: "app", Name: "docs", PrimaryKey: []int{0}, Columns: []th.Column{
		{Name: "id", Type: th.Int}, {Name: "doc", Type: th.JSON}, {Name: "note", Type: th.Varchar(40)}, {Name: "meta", Type: th.JSON}}}
	before := []string{
		`{"b":1,"zz":{"q":[1,2,3],"r":"x"},"arr":[10,20,30]}`,
		`[{"key with space":1},"tail"]`,
	}
	diffs := []th.JSONDiffs{
		{
			th.JSONReplace("$.zz.r", `"y"`),    // nested member
			th.JSONInsert("$.c", `{"n":null}`), // lands between "b" and "zz": shorter keys first
			th.JSONInsert("$.arr[1]", `15`),    // array insert
			th.JSONRemove("$.arr[3]"),          // remove the last element (30)
			th.JSONRemove("$.zz.q[0]"),         // nested array remove
			th.JSONInsert("$.ab", `true`),      // after "c", before "zz" (bytewise it would come first)
		},
		{
			th.JSONReplace(`$[0]."key with space"`, `[1,2]`),
			th.JSONRemove("$[1]"), // the last element
			th.JSONInsert("$[0].k", `"v"`),
		},
	}
	after := []string{
		`{"b":1,"c":{"n":null},"ab":true,"zz":{"q":[2,3],"r":"y"},"arr":[10,15,20]}`,
		`[{"k":"v","key with space":[1,2]}]`,
	}
	b := th.NewBuilder(th.MySQL)
	b.Txn(func(x *th.Txn) {
		x.Insert(tbl, th.Row{int32(1), before[0], "one", `{"m":1}`}, th.Row{int32(2), before[1], "two", nil})
	})
	b.Txn(func(x *th.Txn) { // one event, two rows, two JSON columns of which one is logged whole
		x.PartialUpdate(tbl,
			th.Row{int32(1), before[0], "one", `{"m":1}`}, th.Row{int32(1), diffs[0], "one!", `{"m":2}`},
			th.Row{int32(2), before[1], "two", nil}, th.Row{int32(2), diffs[1], "two", nil})
	})
	b.Txn(func(x *th.Txn) { // the reference: the same documents written whole
		x.Update(tbl,
			th.Row{int32(1), after[0], "one!", `{"m":2}`}, th.Row{int32(1), after[0], "one!", `{"m":2}`},
			th.Row{int32(2), after[1], "two", nil}, th.Row{int32(2), after[1], "two", nil})
	})
	b.Txn(func(x *th.Txn) { // binlog_row_image=MINIMAL: no document to apply the diff to
		x.PartialUpdate(tbl, th.Row{int32(1), th.Absent, th.Absent, th.Absent}, th.Row{int32(1), th.JSONDiffs{th.JSONRemove("$.ab")}, th.Absent, th.Absent})
	})
	bl := b.Build()
	if compress {
		var err error
		bl, err = th.CompressTransactions(bl)
		require.NoError(t, err)
		_, ok := bl.Nth(replication.TRANSACTION_PAYLOAD_EVENT, 4)
		require.True(t, ok, "four compressed transactions")
	}
	p := startPrimary(t, bl)
	src, err := binlogstream.NewSyncerSource(binlogstream.SyncerConfig{
		DSN:      binlogstream.DSN{User: p.User(), Password: p.Password(), Host: p.Host(), Port: p.Port()},
		ServerID: 4243, Flavor: string(bl.Flavor),
		Tune: func(c *replication.BinlogSyncerConfig) { c.RenderJSONAsMySQLText = true },
	})
	require.NoError(t, err)
	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src,
		Start: binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type rowsEv struct {
		typ    replication.EventType
		values [][]any
		raw    [][]any
		pj     [][]*binlogstream.PartialJSON
		pjErr  [][]error
	}
	var got []rowsEv
	s.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		re, ok := ev.Event.(*replication.RowsEvent)
		if !ok {
			return nil
		}
		r := rowsEv{typ: ev.Header.EventType, raw: re.Rows}
		for i := range re.Rows {
			r.values = append(r.values, ev.RowValues(i))
			var pjs []*binlogstream.PartialJSON
			var errs []error
			for c := range re.Rows[i] {
				pj, err := ev.PartialJSON(i, c)
				pjs, errs = append(pjs, pj), append(errs, err)
			}
			r.pj, r.pjErr = append(r.pj, pjs), append(r.pjErr, errs)
		}
		got = append(got, r)
		if len(got) == 4 {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, s.Run(ctx), context.Canceled)
	require.Len(t, got, 4)

	partial, whole, minimal := got[1], got[2], got[3]
	require.Equal(t, replication.PARTIAL_UPDATE_ROWS_EVENT, partial.typ)
	require.Equal(t, replication.UPDATE_ROWS_EVENTv2, whole.typ)
	for k := range after {
		bi, ai := 2*k, 2*k+1
		assert.Equal(t, after[k], partial.values[ai][1], "row %d: the after document", k)
		assert.Equal(t, whole.raw[ai][1], partial.values[ai][1], "row %d: as go-mysql renders the whole document", k)
		assert.IsType(t, &replication.JsonDiff{}, partial.raw[ai][1], "go-mysql's own value stays in Rows")
		assert.Equal(t, partial.raw[bi][1], partial.values[bi][1], "the before image is go-mysql's")
		pj := partial.pj[ai][1]
		require.NotNil(t, pj, "row %d", k)
		require.NoError(t, partial.pjErr[ai][1])
		assert.Equal(t, after[k], pj.After)
		assert.Equal(t, before[k], pj.Before, "before %d, re-read from the event", k)
		assert.Equal(t, partial.raw[bi][1], pj.Before, "before %d, as go-mysql renders it", k)
		require.Len(t, pj.Diffs, len(diffs[k]), "row %d: every diff", k)
		for d := range diffs[k] {
			assert.Equal(t, diffs[k][d].Op, pj.Diffs[d].Op)
			assert.Equal(t, diffs[k][d].Path, pj.Diffs[d].Path)
		}
		assert.Nil(t, partial.pj[bi][1], "a before image is no diff")
		assert.Nil(t, partial.pj[ai][0], "an INT column is no diff")
	}
	assert.Equal(t, `{"m":2}`, partial.values[1][3], "a JSON column logged whole in a partial event")
	assert.Nil(t, partial.pj[1][3])
	assert.Equal(t, "one!", partial.values[1][2])
	assert.Nil(t, whole.pj[1][1], "not a partial event")

	require.Equal(t, replication.PARTIAL_UPDATE_ROWS_EVENT, minimal.typ)
	assert.Equal(t, binlogstream.Absent, minimal.values[0][1])
	v, isErr := minimal.values[1][1].(error)
	require.True(t, isErr, "the value is the error, not a guess: %#v", minimal.values[1][1])
	var perr *binlogstream.PartialJSONError
	require.True(t, errors.As(v, &perr))
	assert.Equal(t, "doc", perr.Name)
	assert.Equal(t, 1, perr.Column)
	assert.ErrorIs(t, v, binlogstream.ErrPartialJSONNoBefore)
	assert.ErrorIs(t, v, binlogstream.ErrPartialJSON)
	assert.ErrorIs(t, minimal.pjErr[1][1], binlogstream.ErrPartialJSONNoBefore)
	require.NotNil(t, minimal.pj[1][1], "the diffs stay reachable")
	assert.Equal(t, []binlogstream.JSONDiff{{Op: replication.JsonDiffOperationRemove, Path: "$.ab"}}, minimal.pj[1][1].Diffs)
	assert.Empty(t, minimal.pj[1][1].After)
	own, err := binlogstream.ApplyJSONDiffs(after[0], minimal.pj[1][1].Diffs) // a consumer's copy
	require.NoError(t, err)
	assert.Equal(t, `{"b":1,"c":{"n":null},"zz":{"q":[2,3],"r":"y"},"arr":[10,15,20]}`, own)
	t.Log(v)
}
