// Package snapshot is the pure core of a table snapshot taken while the
// binlog streams: per table, the boundary key up to which rows were
// delivered; which row changes of the stream are delivered, changed into
// an insert or a delete, or held back; the folding of held-back changes
// into a chunk read at an earlier binlog position; and the encoding of that
// progress inside a resume token. It does no I/O: the chunk reads and the
// stream are the caller's, so tests drive it with plain loops.
package snapshot

import (
	"bytes"
	"cmp"
	"fmt"
	"strings"
)

// Key is a row's key: Cmp in a form whose order is the server's index
// order (compared by a Compare function), Raw as the server sends the
// values (the literals of the next chunk's query, and what a resume token
// records). Raw values are int64, uint64, []byte or nil.
type Key struct {
	Cmp []any
	Raw []any
}

// Compare orders two keys' Cmp values: negative, 0, positive.
type Compare func(a, b []any) int

// Decimal is a DECIMAL value's text ("-12.50"), compared by value.
type Decimal string

// CompareValues is a Compare for keys whose values are int64, uint64,
// Decimal, string or []byte (strings and byte slices byte by byte: binary
// strings, weight strings, fixed-format temporal text). Values of
// different kinds, other than int64 against uint64, are a caller's bug:
// it panics rather than guess an order.
func CompareValues(a, b []any) int {
	for i := range min(len(a), len(b)) {
		if c := compareValue(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}

func compareValue(a, b any) int {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp.Compare(x, y)
		case uint64:
			if x < 0 {
				return -1
			}
			return cmp.Compare(uint64(x), y)
		}
	case uint64:
		switch y := b.(type) {
		case uint64:
			return cmp.Compare(x, y)
		case int64:
			return -compareValue(y, x)
		}
	case Decimal:
		if y, ok := b.(Decimal); ok {
			return compareDecimal(string(x), string(y))
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y)
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y)
		}
	}
	panic(fmt.Sprintf("snapshot: cannot compare key values %T and %T", a, b))
}

// compareDecimal compares two decimal texts ("-0012.340", "5", ".5") by
// value.
func compareDecimal(a, b string) int {
	an, ai, af := splitDecimal(a)
	bn, bi, bf := splitDecimal(b)
	if an != bn {
		if an {
			return -1
		}
		return 1
	}
	c := cmp.Compare(len(ai), len(bi))
	if c == 0 {
		c = strings.Compare(ai, bi)
	}
	if c == 0 {
		n := max(len(af), len(bf))
		c = strings.Compare(af+strings.Repeat("0", n-len(af)), bf+strings.Repeat("0", n-len(bf)))
	}
	if an {
		return -c
	}
	return c
}

// splitDecimal returns a decimal's sign (true: negative and not zero), its
// integer digits without leading zeros and its fraction digits without
// trailing zeros.
func splitDecimal(s string) (neg bool, ip, fp string) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	} else {
		s = strings.TrimPrefix(s, "+")
	}
	ip, fp, _ = strings.Cut(s, ".")
	ip = strings.TrimLeft(ip, "0")
	fp = strings.TrimRight(fp, "0")
	if ip == "" && fp == "" {
		neg = false
	}
	return neg, ip, fp
}
