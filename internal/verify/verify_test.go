package verify_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/snapshot"
	"github.com/binlogstream/binlogstream/internal/verify"
)

// collationEqual is the negative control: a comparison as a
// case-insensitive PAD SPACE collation and a rounding float compare
// would see values, the way a SQL "=" or CHECKSUM-by-value tool does.
func collationEqual(a, b any) bool {
	norm := func(v any) any {
		switch x := v.(type) {
		case string:
			return strings.ToLower(strings.TrimRight(x, " "))
		case []byte:
			return strings.ToLower(strings.TrimRight(string(x), " "))
		case float64:
			return float32(x)
		case uint64:
			return int64(x)
		}
		return v
	}
	return norm(a) == norm(b)
}

// TestEqualFamilies: each column family in the form chunkread reads it;
// differ cases are differences as stored, and those marked collation are
// ones a collation-aware compare misses.
func TestEqualFamilies(t *testing.T) {
	next := math.Nextafter(0.1, 1)
	cases := []struct {
		name      string
		a, b      any
		equal     bool
		collation bool // collationEqual misses this difference
	}{
		{"int same", int64(-5), int64(-5), true, false},
		{"int differs", int64(5), int64(6), false, false},
		{"unsigned max", uint64(math.MaxUint64), uint64(math.MaxUint64), true, false},
		{"unsigned vs signed same value", uint64(7), int64(7), true, false},
		{"unsigned max vs -1", uint64(math.MaxUint64), int64(-1), false, false},
		{"decimal text", "12.50", "12.50", true, false},
		{"decimal last digit", "12.50", "12.51", false, false},
		{"float32 same", float32(1.5), float32(1.5), true, false},
		{"float32 last bit", float32(0.1), math.Nextafter32(0.1, 1), false, false},
		{"double last bit", 0.1, next, false, true},
		{"double -0 vs +0", math.Copysign(0, -1), 0.0, false, true},
		{"varchar same", "abc", "abc", true, false},
		{"varchar case", "abc", "aBc", false, true},
		{"char trailing space", "ab", "ab ", false, true},
		{"text case", strings.Repeat("x", 300) + "A", strings.Repeat("x", 300) + "a", false, true},
		{"utf8 accent", "é", "e", false, false},
		{"binary same", []byte{0, 1, 2}, []byte{0, 1, 2}, true, false},
		{"binary trailing zero", []byte{1, 0}, []byte{1}, false, false},
		{"blob byte", []byte("blob\x00A"), []byte("blob\x00a"), false, true},
		{"string vs bytes same", "abc", []byte("abc"), true, false},
		{"date", "2024-02-29", "2024-02-29", true, false},
		{"time fsp", "12:00:00.000001", "12:00:00.000000", false, false},
		{"datetime microsecond", "2024-01-01 00:00:00.123456", "2024-01-01 00:00:00.123457", false, false},
		{"timestamp utc", "2024-01-01 00:00:00", "2024-01-01 00:00:00", true, false},
		{"json spacing", []byte(`{"a":1}`), []byte(`{"a": 1}`), false, false},
		{"json key case", []byte(`{"a":1}`), []byte(`{"A":1}`), false, true},
		{"enum index", int64(2), int64(3), false, false},
		{"set mask", int64(5), int64(5), true, false},
		{"bit", int64(0b101), int64(0b100), false, false},
		{"null vs empty", nil, "", false, false},
		{"null vs empty bytes", nil, []byte{}, false, false},
		{"null vs zero", nil, int64(0), false, false},
		{"null vs null", nil, nil, true, false},
		{"empty vs empty", "", []byte{}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.equal, verify.Equal(c.a, c.b))
			require.Equal(t, c.equal, verify.Equal(c.b, c.a))
			sa := verify.Checksum([][]any{{int64(1), c.a}})
			sb := verify.Checksum([][]any{{int64(1), c.b}})
			require.Equal(t, c.equal, sa == sb, "checksum")
			if c.collation {
				require.True(t, collationEqual(c.a, c.b), "the negative control misses it")
			}
		})
	}
}

func table() *verify.Table {
	return &verify.Table{Name: "d.t", Columns: []string{"id", "s", "f"}, Key: []int{0}, Compare: snapshot.CompareValues}
}

func side(rows ...[]any) verify.Side {
	s := verify.Side{Rows: rows}
	for _, r := range rows {
		s.Keys = append(s.Keys, []any{r[0]})
	}
	return s
}

// TestRowDiffs: missing, extra and changed rows, each reported once with
// its key, and a changed row with exactly the columns that differ.
func TestRowDiffs(t *testing.T) {
	src := side(
		[]any{int64(1), "a", 1.0},
		[]any{int64(2), "b", 2.0},
		[]any{int64(3), "c", 3.0},
		[]any{int64(5), "e", 5.0},
	)
	dst := side(
		[]any{int64(0), "z", 0.0},                  // extra before
		[]any{int64(1), "a", 1.0},                  // same
		[]any{int64(2), "B", math.Nextafter(2, 3)}, // both columns
		[]any{int64(4), "d", 4.0},                  // extra between
		[]any{int64(5), "e ", 5.0},                 // trailing space
		[]any{int64(6), "f", 6.0},                  // extra after
	)
	equal, diffs, err := verify.Compare(table(), src, dst)
	require.NoError(t, err)
	require.False(t, equal)
	require.Equal(t, []verify.Diff{
		{Table: "d.t", Key: []any{int64(0)}, Kind: verify.Extra, Src: -1},
		{Table: "d.t", Key: []any{int64(2)}, Kind: verify.Changed, Columns: []string{"s", "f"}, Src: 1},
		{Table: "d.t", Key: []any{int64(3)}, Kind: verify.Missing, Src: 2},
		{Table: "d.t", Key: []any{int64(4)}, Kind: verify.Extra, Src: -1},
		{Table: "d.t", Key: []any{int64(5)}, Kind: verify.Changed, Columns: []string{"s"}, Src: 3},
		{Table: "d.t", Key: []any{int64(6)}, Kind: verify.Extra, Src: -1},
	}, diffs)

	equal, diffs, err = verify.Compare(table(), src, src)
	require.NoError(t, err)
	require.True(t, equal)
	require.Empty(t, diffs)

	equal, diffs, err = verify.Compare(table(), verify.Side{}, verify.Side{})
	require.NoError(t, err)
	require.True(t, equal)
	require.Empty(t, diffs)
}

// TestRowDiffsCollationKey: keys that compare equal are one row, whose
// key column's bytes then differ (a case-insensitive key, 'a' vs 'A').
func TestRowDiffsCollationKey(t *testing.T) {
	tbl := &verify.Table{Name: "d.t", Columns: []string{"k", "v"}, Key: []int{0}, Compare: snapshot.CompareValues}
	src := verify.Side{Rows: [][]any{{"abc", int64(1)}}, Keys: [][]any{{"ABC"}}}
	dst := verify.Side{Rows: [][]any{{"Abc", int64(1)}}, Keys: [][]any{{"ABC"}}}
	_, diffs, err := verify.Compare(tbl, src, dst)
	require.NoError(t, err)
	require.Equal(t, []verify.Diff{{Table: "d.t", Key: []any{"abc"}, Kind: verify.Changed, Columns: []string{"k"}}}, diffs)
}

// TestRowDiffsRefusesDisorder: rows out of key order, or a key twice,
// are a caller's error, not differences.
func TestRowDiffsRefusesDisorder(t *testing.T) {
	ok := side([]any{int64(1), "a", 1.0})
	_, err := verify.RowDiffs(table(), side([]any{int64(2), "a", 1.0}, []any{int64(1), "a", 1.0}), ok)
	require.ErrorContains(t, err, "source rows are not in key order")
	_, err = verify.RowDiffs(table(), ok, side([]any{int64(1), "a", 1.0}, []any{int64(1), "a", 1.0}))
	require.ErrorContains(t, err, "target rows are not in key order")
	_, err = verify.RowDiffs(table(), ok, side([]any{int64(1), "a"}))
	require.ErrorContains(t, err, "2 values for 3 columns")
}

func TestKindString(t *testing.T) {
	require.Equal(t, "missing extra changed", verify.Missing.String()+" "+verify.Extra.String()+" "+verify.Changed.String())
}
