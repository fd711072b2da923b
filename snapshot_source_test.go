package binlogstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChunkKeys: keys gives each row of a chunk its key with every Cmp
// value localCmp gives; a key whose columns all compare by their raw
// values (integers, binary strings, dates) keeps Cmp and Raw in one
// slice, any other key in two, and no two rows share a key's values.
func TestChunkKeys(t *testing.T) {
	id := Column{Name: "id", DataType: "bigint"}
	day := Column{Name: "day", DataType: "date"}
	amount := Column{Name: "amount", DataType: "decimal"}
	code := Column{Name: "code", DataType: "varchar", Charset: "utf8mb4", Collation: "utf8mb4_bin"}
	for _, tc := range []struct {
		name   string
		cols   []Column
		rows   [][]any
		shared bool
	}{
		{"bigint", []Column{id}, [][]any{{int64(1)}, {int64(2)}}, true},
		{"bigint and date", []Column{id, day}, [][]any{{int64(1), "2024-01-02"}, {int64(1), "2024-01-03"}}, true},
		{"decimal", []Column{amount}, [][]any{{"1.50"}, {"2.00"}}, false},
		{"binary-collated text", []Column{id, code}, [][]any{{int64(1), "a "}, {int64(1), "b"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pk []string
			for _, c := range tc.cols {
				pk = append(pk, c.Name)
			}
			st, err := newSnapTable(SnapshotTable{Schema: "d", Name: "t", Columns: tc.cols, PrimaryKey: pk})
			require.NoError(t, err)
			assert.Equal(t, tc.shared, st.rawCmp)
			res := &chunkRead{rows: tc.rows}
			require.NoError(t, (&syncerChunks{}).keys(st, res))
			require.Len(t, res.keyed, len(tc.rows))
			for i, r := range res.keyed {
				k := r.Key
				require.Len(t, k.Raw, len(tc.cols))
				require.Len(t, k.Cmp, len(tc.cols))
				for j, raw := range k.Raw {
					assert.Equal(t, keyRaw(tc.rows[i][j]), raw, "row %d column %d", i, j)
					want, err := localCmp(st.kinds[j], raw)
					require.NoError(t, err)
					assert.Equal(t, want, k.Cmp[j], "row %d column %d", i, j)
				}
				assert.Equal(t, tc.shared, &k.Cmp[0] == &k.Raw[0], "row %d: Cmp and Raw in one slice", i)
			}
			assert.NotSame(t, &res.keyed[0].Key.Raw[0], &res.keyed[1].Key.Raw[0])
			assert.NotSame(t, &res.keyed[0].Key.Cmp[0], &res.keyed[1].Key.Cmp[0])
		})
	}
}
