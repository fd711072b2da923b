package mysqljson

import (
	"strings"
)

// Node is a JSON value. Objects keep their members in MySQL's order
// (shorter keys first, then bytewise), as the binary format stores them
// and as the server prints them.
type Node struct {
	kind  byte // kindObject, kindArray, kindScalar
	keys  []string
	elems []*Node
	text  string // a scalar's JSON text
}

const (
	kindScalar byte = iota
	kindObject
	kindArray
)

// appendText writes n as compact JSON text.
func (n *Node) appendText(b *strings.Builder) {
	switch n.kind {
	case kindObject:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(k))
			b.WriteByte(':')
			n.elems[i].appendText(b)
		}
		b.WriteByte('}')
	case kindArray:
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(',')
			}
			e.appendText(b)
		}
		b.WriteByte(']')
	default:
		b.WriteString(n.text)
	}
}

func (n *Node) String() string {
	var b strings.Builder
	n.appendText(&b)
	return b.String()
}

// keyLess is MySQL's order of object keys: shorter first, then
// bytewise.
func keyLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// member is the index of the object member k, -1 when there is none.
func (n *Node) member(k string) int {
	for i, x := range n.keys {
		if x == k {
			return i
		}
	}
	return -1
}

// insertAt inserts v into s before index i.
func insertAt[T any](s []T, i int, v T) []T {
	var zero T
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}
