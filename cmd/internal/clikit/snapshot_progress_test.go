package clikit

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSnapshotProgressEstimates: the tables the snapshot has to read are
// estimated once each, a table it adds later adds its estimate, and
// without an estimate (no estimator, or an error) none is shown.
func TestSnapshotProgressEstimates(t *testing.T) {
	var asked [][]string
	estimate := func(_ context.Context, ids []string) (map[string]uint64, error) {
		asked = append(asked, ids)
		return map[string]uint64{"d.a": 100, "d.b": 50, "d.c": 7}, nil
	}
	var p SnapshotProgress
	_, known := p.Estimate()
	assert.False(t, known, "no table yet")
	p.See(t.Context(), []string{"d.a", "d.b"}, estimate)
	p.See(t.Context(), []string{"d.b"}, estimate) // d.a done
	assert.Equal(t, 2, p.Tables())
	rows, _ := p.Estimate()
	assert.EqualValues(t, 150, rows)
	p.See(t.Context(), []string{"d.b", "d.c", "d.x"}, estimate) // d.x: not listed by the server
	assert.Equal(t, [][]string{{"d.a", "d.b"}, {"d.c", "d.x"}}, asked)
	assert.Equal(t, 4, p.Tables())
	rows, known = p.Estimate()
	assert.EqualValues(t, 157, rows)
	assert.True(t, known)

	var none SnapshotProgress
	none.See(t.Context(), []string{"d.a"}, nil)
	_, known = none.Estimate()
	assert.False(t, known)
	var failed SnapshotProgress
	failed.See(t.Context(), []string{"d.a"}, func(context.Context, []string) (map[string]uint64, error) {
		return nil, errors.New("connection refused")
	})
	_, known = failed.Estimate()
	assert.False(t, known)
	assert.Equal(t, 1, failed.Tables(), "the tables are counted all the same")
}
