package binlogstream_test

import (
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
