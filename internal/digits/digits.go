// Package digits writes unsigned integers in decimal two digits a step,
// into the caller's buffer: the rows decoder's temporal and DECIMAL text
// and binlog-tail's integers, without strconv's buffer and copy.
package digits

import (
	"math/bits"
	"slices"
)

// Pairs holds "00" to "99": the digits of n are Pairs[2*n] and
// Pairs[2*n+1].
const Pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// numDigits is the number of decimal digits of v, 0 for 0: the bit length
// times log10(2) is that or one more.
func numDigits(v uint64) int {
	t := bits.Len64(v) * 1233 >> 12
	if v < pow10[t] {
		return t
	}
	return t + 1
}

// AppendUint is strconv.AppendUint(b, v, 10), written in place.
func AppendUint(b []byte, v uint64) []byte {
	if v < 10 {
		return append(b, byte('0'+v))
	}
	return AppendPadded(b, v, 0)
}

// AppendPadded appends v in decimal with at least width digits (fmt's
// %0Nd for a non-negative value).
func AppendPadded(b []byte, v uint64, width int) []byte {
	switch {
	case width == 2 && v < 100:
		return append(b, Pairs[2*v], Pairs[2*v+1])
	case width == 4 && v < 10000:
		hi, lo := v/100, v%100
		return append(b, Pairs[2*hi], Pairs[2*hi+1], Pairs[2*lo], Pairs[2*lo+1])
	case width == 6 && v < 1000000:
		a, m, z := v/10000, v/100%100, v%100
		return append(b, Pairs[2*a], Pairs[2*a+1], Pairs[2*m], Pairs[2*m+1], Pairs[2*z], Pairs[2*z+1])
	}
	n := max(width, numDigits(v), 1)
	b = slices.Grow(b, n)
	at := len(b)
	b = b[:at+n]
	i := at + n
	for v >= 100 {
		q := v / 100
		r := 2 * (v - 100*q)
		i -= 2
		b[i], b[i+1] = Pairs[r], Pairs[r+1]
		v = q
	}
	if v >= 10 {
		i -= 2
		b[i], b[i+1] = Pairs[2*v], Pairs[2*v+1]
	} else {
		i--
		b[i] = byte('0' + v)
	}
	for k := at; k < i; k++ {
		b[k] = '0'
	}
	return b
}
