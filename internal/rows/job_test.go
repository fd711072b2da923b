package rows

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"
)

// TestCheckImagesCorrupt: row data after images of no column (go-mysql's
// DecodeData would loop on it) is an ErrCorrupt error naming the table.
func TestCheckImagesCorrupt(t *testing.T) {
	re := &replication.RowsEvent{ColumnCount: 2, ColumnBitmap1: []byte{0},
		Table: &replication.TableMapEvent{Schema: []byte("app"), Table: []byte("t")}}
	err := checkImages(re, 0, []byte{1, 2})
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "app.t with 2 bytes of rows but no column in its images")
	require.NoError(t, checkImages(re, 2, []byte{1, 2}), "no row data")
	re.ColumnBitmap1 = []byte{2}
	require.NoError(t, checkImages(re, 0, []byte{1, 2}), "a column in the images")
}
