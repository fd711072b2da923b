package tailline

import (
	"bytes"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// TestFormatterRowsAndToken: AppendEvent writes a line per row change,
// each line's token reads back with Resume, and limit cuts the rows.
func TestFormatterRowsAndToken(t *testing.T) {
	re := &replication.RowsEvent{Table: &replication.TableMapEvent{Schema: []byte("d"), Table: []byte("t")},
		Rows: [][]any{{int32(1)}, {int32(2)}, {int32(3)}}}
	ev := testEvent(replication.WRITE_ROWS_EVENTv2, re, "")
	ev.Table = &binlogstream.Table{Source: binlogstream.SchemaFromBinlog, Columns: []binlogstream.Column{{Name: "id", DataType: "int"}}}
	var f Formatter
	b, n, last := f.AppendEvent(nil, ev, nil, -1)
	require.Equal(t, 3, n)
	lines := bytes.SplitAfter(b, []byte("\n"))
	require.Len(t, lines, 4) // and an empty tail
	assert.Equal(t, string(lines[2]), string(b[last:]))
	for _, line := range lines[:3] {
		mustToken(t, line)
	}
	b2, n2, last2 := f.AppendEvent(nil, ev, nil, 2)
	assert.Equal(t, 2, n2)
	assert.Equal(t, string(lines[0])+string(lines[1]), string(b2))
	assert.Equal(t, len(lines[0]), last2)

	q := &replication.QueryEvent{Query: []byte("COMMIT")}
	b3, n3, _ := f.AppendEvent(nil, testEvent(replication.QUERY_EVENT, q, ""), nil, -1)
	assert.Zero(t, n3)
	assert.Empty(t, b3)

	// A statement's line carries ev.Resume, which reads back.
	q = &replication.QueryEvent{Schema: []byte("d"), Query: []byte("CREATE TABLE t (id INT)")}
	qev := testEvent(replication.QUERY_EVENT, q, "")
	r, err := Resume(AppendQueryLine(nil, q, qev))
	require.NoError(t, err)
	assert.Equal(t, qev.Resume, r)

	_, err = Resume([]byte(`{"type":"x"}`))
	assert.Error(t, err)
}

func mustToken(t *testing.T, line []byte) []byte {
	tok, ok := Token(line)
	require.True(t, ok)
	return tok
}
