package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeys(t *testing.T) {
	k, err := intKey([]any{int64(-5), uint64(18446744073709551615)})
	require.NoError(t, err)
	assert.Equal(t, []string{"-5", "18446744073709551615"}, k)
	assert.Equal(t, k, decodeKey(encodeKey(k)))
	args, err := keyArgs(k)
	require.NoError(t, err)
	assert.Equal(t, []any{int64(-5), uint64(18446744073709551615)}, args)
	_, err = intKey([]any{"x"})
	assert.ErrorContains(t, err, "not an integer")

	for _, c := range []struct {
		a, b []string
		want int
	}{
		{[]string{"1"}, []string{"2"}, -1},
		{[]string{"10"}, []string{"9"}, 1}, // numbers, not text
		{[]string{"-10"}, []string{"-9"}, -1},
		{[]string{"18446744073709551615"}, []string{"9223372036854775807"}, 1},
		{[]string{"3", "1"}, []string{"3", "2"}, -1},
		{[]string{"3", "2"}, []string{"3", "2"}, 0},
		{[]string{"4", "0"}, []string{"3", "9"}, 1},
	} {
		assert.Equal(t, c.want, sign(compareKeys(c.a, c.b)), "%v %v", c.a, c.b)
	}
	segs := []segment{{Upto: []string{"7"}, File: "f.1", Pos: 4, GTID: "0-1-2"}}
	back, err := decodeSegments(encodeSegments(segs))
	require.NoError(t, err)
	assert.Equal(t, segs, back)
	none, err := decodeSegments("")
	require.NoError(t, err)
	assert.Nil(t, none)
	_, err = decodeSegments("{")
	assert.Error(t, err)
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
