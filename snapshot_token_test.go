package binlogstream_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func TestSnapshotTokenRoundTrip(t *testing.T) {
	for _, r := range sampleResumePositions() {
		r = binlogstream.WithSnapshotSample(r)
		tok := r.String()
		got, err := binlogstream.ParseResumePosition(tok)
		require.NoError(t, err, tok)
		assert.Equal(t, r, got)
		assert.NotEqual(t, r, binlogstream.WithSnapshotSample(binlogstream.ResumePosition{}), "the state is part of the value")

		var w binlogstream.TokenWriter
		assert.Equal(t, tok, string(w.Append(nil, r)))
		assert.Equal(t, tok, string(w.Append(nil, r)), "a second token from the kept state")
		for i := 5; i < len(tok)-1; i += 7 {
			_, err := binlogstream.ParseResumePosition(tok[:i])
			assert.Error(t, err, "truncated at %d", i)
		}
	}
	// Tokens without a snapshot encode as before.
	plain := sampleResumePositions()[0]
	assert.False(t, strings.Contains(plain.String(), binlogstream.WithSnapshotSample(plain).String()[5:12]))
}

// TestTokenWriterSnapshotRows: the tokens of a snapshot's rows (each
// with its boundary key: integers whose encoding grows, strings of
// varying length, a key followed by the tables still to read) through
// one TokenWriter are AppendText's to the byte, in order, shuffled and
// between tokens of the binlog, and the rows of one chunk cost no
// allocation once the writer has grown.
func TestTokenWriterSnapshotRows(t *testing.T) {
	var ints, strs, bins []any
	for i := range 20_000 {
		ints = append(ints, int64(i*7-50))
		strs = append(strs, fmt.Sprintf("customer-%d", i*13))
		bins = append(bins, []byte(strings.Repeat("k", i%40)))
	}
	var all []binlogstream.ResumePosition
	for _, r := range sampleResumePositions() {
		for _, keys := range [][]any{ints, strs, bins} {
			for _, others := range []bool{false, true} {
				all = append(all, binlogstream.WithSnapshotRows(r, keys[:2_000], others)...)
			}
		}
		// A few rows of a chunk, then a line of the binlog.
		rows := binlogstream.WithSnapshotRows(r, ints, true)
		for i := 0; i+50 <= len(rows); i += 1_000 {
			all = append(all, rows[i:i+50]...)
			all = append(all, r)
		}
	}
	requireTokenWriterText(t, all, 4)

	rows := binlogstream.WithSnapshotRows(sampleResumePositions()[4], strs, true)
	var w binlogstream.TokenWriter
	var got []byte
	k := 0
	got = w.Append(got[:0], rows[0])
	assert.Zero(t, testing.AllocsPerRun(1000, func() { got = w.Append(got[:0], rows[k%len(rows)]); k++ }))
}
