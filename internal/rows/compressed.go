package rows

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
)

// uncompressColumn reads the stored form of a COMPRESSED column's value
// (at most max bytes once uncompressed): empty for an empty value, else a
// header byte, then the value itself when the header's high bit is clear,
// or, when it is set, the value's length in header&7 bytes (big-endian)
// and its zlib stream (raw deflate when header&8 is set; header&0x70 is
// the algorithm, zlib's 0).
func uncompressColumn(stored []byte, max int) ([]byte, error) {
	if len(stored) == 0 {
		return stored, nil
	}
	h := stored[0]
	if h&0x80 == 0 {
		return stored[1:], nil
	}
	n := int(h & 7)
	if n == 0 || n > 4 || h&0x70 != 0 || len(stored) < 1+n {
		return nil, fmt.Errorf("compression header %#02x", h)
	}
	size := 0
	for _, x := range stored[1 : 1+n] {
		size = size<<8 | int(x)
	}
	if size > max {
		return nil, fmt.Errorf("an uncompressed length of %d bytes, more than the column's %d", size, max)
	}
	var r io.ReadCloser
	if h&8 != 0 {
		r = flate.NewReader(bytes.NewReader(stored[1+n:]))
	} else {
		var err error
		if r, err = zlib.NewReader(bytes.NewReader(stored[1+n:])); err != nil {
			return nil, err
		}
	}
	defer r.Close()
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, fmt.Errorf("uncompress: %w", err)
	}
	if k, err := r.Read(make([]byte, 1)); k != 0 || err != nil && !errors.Is(err, io.EOF) {
		return nil, errors.New("uncompress: more data than its length says")
	}
	return out, nil
}
