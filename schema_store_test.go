package binlogstream_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

// TestFileSchemaStore: records round-trip; a torn last record (a crash
// while writing it) is dropped, corruption before it is refused; a second
// store on the same file is refused while the first holds it.
func TestFileSchemaStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "h")
	s := binlogstream.NewFileSchemaStore(path)
	recs, err := s.Load()
	require.NoError(t, err)
	require.Empty(t, recs)
	a := binlogstream.SchemaRecord{Database: "d", Statement: "CREATE TABLE t (a INT)", End: binlogstream.Position{File: "b.000001", Offset: 300}}
	b := binlogstream.SchemaRecord{Database: "d", Statement: "DROP TABLE t", GTID: "0-1-7"}
	require.NoError(t, s.Append(a))
	require.NoError(t, s.Append(b))

	other := binlogstream.NewFileSchemaStore(path)
	_, err = other.Load()
	require.ErrorContains(t, err, "in use by another store")
	require.NoError(t, s.Close())

	s = binlogstream.NewFileSchemaStore(path)
	recs, err = s.Load()
	require.NoError(t, err)
	require.Equal(t, []binlogstream.SchemaRecord{a, b}, recs)
	require.NoError(t, s.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	// a torn last line is dropped (and cut), the records before it kept
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(data, []byte("0badc0de {\"db\":\"d\",\"sq")...), 0o600))
	s = binlogstream.NewFileSchemaStore(path)
	recs, err = s.Load()
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.NoError(t, s.Close())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, data, after)

	// a flipped byte in the first record is corruption, not a torn write
	data[len(data)-20] ^= 1
	bad := append([]byte{}, data...)
	first := len("binlogstream schema history v1\n") + 15
	bad[first] ^= 1
	require.NoError(t, os.WriteFile(path, bad, 0o600))
	s = binlogstream.NewFileSchemaStore(path)
	_, err = s.Load()
	require.ErrorContains(t, err, "record 1")
	require.ErrorContains(t, err, "corrupt")
	require.NoError(t, s.Close())
}
