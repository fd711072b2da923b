package binlogstream

import (
	"path/filepath"
	"testing"

	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/stretchr/testify/require"
)

// TestSchemaHistoryContradiction: a DDL record that contradicts the
// history (a column it does not have) is an ErrSchemaHistory.
func TestSchemaHistoryContradiction(t *testing.T) {
	h := schema.NewHistory()
	_, err := applyRecord(h, &SchemaRecord{Database: "d", Statement: "CREATE TABLE t (a INT)"})
	require.NoError(t, err)
	_, err = applyRecord(h, &SchemaRecord{Database: "d", Statement: "ALTER TABLE t DROP COLUMN b"})
	require.ErrorIs(t, err, ErrSchemaHistory)
	require.ErrorContains(t, err, "binlogstream: schema history: ")
	_, err = applyRecord(h, &SchemaRecord{Database: "d", Statement: "ALTER TABLE t ADD COLUMN a INT"})
	require.ErrorIs(t, err, ErrSchemaHistory)
}

// TestSchemaLogStatementRoundTrip: a DDL statement that is not UTF-8 (one
// in a client charset that does not decode) comes back from the file
// store with U+FFFD for those bytes; the same statement met again on a
// resumed stream is the same record, not another binlog's.
func TestSchemaLogStatementRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h")
	st := NewFileSchemaStore(path)
	_, err := st.Load()
	require.NoError(t, err)
	raw := SchemaRecord{Database: "d", Statement: "CREATE TABLE \x81\x20 (a INT)", End: Position{File: "b.000001", Offset: 300}}
	require.NoError(t, st.Append(raw))
	require.NoError(t, st.Close())

	st = NewFileSchemaStore(path)
	defer st.Close()
	recs, err := st.Load()
	require.NoError(t, err)
	require.NotEqual(t, raw.Statement, recs[0].Statement, "JSON stores no bytes that are not UTF-8")
	l := &schemaLog{store: st, recs: recs, stmts: map[string]string{recs[0].key(): recs[0].Statement}}
	require.NoError(t, l.append(raw))
	other := raw
	other.Statement = "CREATE TABLE \x81\x20 (b INT)"
	require.ErrorContains(t, l.append(other), "the history belongs to another binlog")
}
