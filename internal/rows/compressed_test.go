package rows

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"testing"

	"github.com/stretchr/testify/require"
)

// compressedForm stores v as MariaDB stores a COMPRESSED column's value
// that compresses: the header (raw deflate when raw), the length in n
// big-endian bytes, the zlib stream.
func compressedForm(t *testing.T, v []byte, n int, raw bool) []byte {
	var z bytes.Buffer
	if raw {
		w, err := flate.NewWriter(&z, flate.BestCompression)
		require.NoError(t, err)
		w.Write(v)
		require.NoError(t, w.Close())
	} else {
		w := zlib.NewWriter(&z)
		w.Write(v)
		require.NoError(t, w.Close())
	}
	h := byte(0x80 | n)
	if raw {
		h |= 8
	}
	out := []byte{h}
	for k := n - 1; k >= 0; k-- {
		out = append(out, byte(len(v)>>(8*k)))
	}
	return append(out, z.Bytes()...)
}

func TestUncompressColumn(t *testing.T) {
	v := bytes.Repeat([]byte("abcé"), 300)
	for _, c := range []struct {
		stored []byte
		want   []byte
	}{
		{nil, nil},
		{[]byte{0}, []byte{}},
		{append([]byte{0}, "short"...), []byte("short")},
		{compressedForm(t, v, 2, true), v},
		{compressedForm(t, v, 2, false), v},
		{compressedForm(t, v, 4, true), v},
		{compressedForm(t, []byte("x"), 1, true), []byte("x")},
	} {
		got, err := uncompressColumn(c.stored, 1<<16)
		require.NoError(t, err)
		require.Equal(t, len(c.want), len(got))
		require.True(t, bytes.Equal(c.want, got))
	}
	good := compressedForm(t, v, 2, true)
	for name, stored := range map[string][]byte{
		"longer than the column":    good,
		"no length bytes":           {0x80},
		"length cut":                {0x82, 0x01},
		"an unknown algorithm":      append([]byte{0x92}, good[1:]...),
		"a stream cut":              good[:len(good)-3],
		"more data than its length": append(compressedForm(t, v, 2, false)[:3:3], append(compressedForm(t, append(v, 'z'), 2, false)[3:], 0)...),
		"garbage":                   {0x8a, 0x00, 0x10, 0xff, 0xff, 0xff},
	} {
		max := 1 << 16
		if name == "longer than the column" {
			max = len(v) - 1
		}
		_, err := uncompressColumn(stored, max)
		require.Error(t, err, name)
	}
}
