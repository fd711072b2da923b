// Package tokenbytes reads the bytes resume tokens are made of: single
// bytes, uvarints and uvarint-length strings. The first failure is kept
// and ends the input, so a parser reads on and checks Err once.
package tokenbytes

import "encoding/binary"

// Reader reads B from the front; Err is the first failure ("" none).
type Reader struct {
	B   []byte
	Err string
}

// Fail records reason, unless a failure came first, and ends the input.
func (d *Reader) Fail(reason string) {
	if d.Err == "" {
		d.Err = reason
	}
	d.B = nil
}

// Byte reads one byte.
func (d *Reader) Byte() byte {
	if len(d.B) < 1 {
		d.Fail("truncated")
		return 0
	}
	c := d.B[0]
	d.B = d.B[1:]
	return c
}

// Uvarint reads an unsigned varint.
func (d *Reader) Uvarint() uint64 {
	v, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.Fail("bad number")
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Varint reads a signed (zigzag) varint.
func (d *Reader) Varint() int64 {
	v, n := binary.Varint(d.B)
	if n <= 0 {
		d.Fail("bad number")
		return 0
	}
	d.B = d.B[n:]
	return v
}

// Bytes reads a uvarint length and that many bytes, copied.
func (d *Reader) Bytes() []byte {
	n := d.Uvarint()
	if n > uint64(len(d.B)) {
		d.Fail("truncated string")
		return nil
	}
	v := append([]byte{}, d.B[:n]...)
	d.B = d.B[n:]
	return v
}

// String reads what Bytes does, as a string.
func (d *Reader) String() string {
	n := d.Uvarint()
	if n > uint64(len(d.B)) {
		d.Fail("truncated string")
		return ""
	}
	s := string(d.B[:n])
	d.B = d.B[n:]
	return s
}
