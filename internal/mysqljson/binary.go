package mysqljson

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Binary JSON type tags (MySQL sql-common/json_binary.h).
const (
	tagSmallObject = 0x00
	tagLargeObject = 0x01
	tagSmallArray  = 0x02
	tagLargeArray  = 0x03
	tagLiteral     = 0x04
	tagInt16       = 0x05
	tagUint16      = 0x06
	tagInt32       = 0x07
	tagUint32      = 0x08
	tagInt64       = 0x09
	tagUint64      = 0x0a
	tagDouble      = 0x0b
	tagString      = 0x0c
	tagOpaque      = 0x0f
)

var errCorrupt = errors.New("corrupt binary JSON")

// DecodeBinary decodes a MySQL binary JSON document (type tag first).
// An empty document is JSON null, as go-mysql and the server read it.
func DecodeBinary(b []byte) (*Node, error) {
	if len(b) == 0 {
		return &Node{text: "null"}, nil
	}
	return decodeValue(b[0], b[1:], 0)
}

func decodeValue(tp byte, b []byte, depth int) (*Node, error) {
	if depth > 1000 {
		return nil, fmt.Errorf("%w: nested too deep", errCorrupt)
	}
	need := func(n int) error {
		if len(b) < n {
			return fmt.Errorf("%w: value of type %#x needs %d bytes, has %d", errCorrupt, tp, n, len(b))
		}
		return nil
	}
	switch tp {
	case tagSmallObject, tagLargeObject, tagSmallArray, tagLargeArray:
		return decodeContainer(tp, b, depth)
	case tagLiteral:
		if err := need(1); err != nil {
			return nil, err
		}
		switch b[0] {
		case 0:
			return &Node{text: "null"}, nil
		case 1:
			return &Node{text: "true"}, nil
		case 2:
			return &Node{text: "false"}, nil
		}
		return nil, fmt.Errorf("%w: literal %#x", errCorrupt, b[0])
	case tagInt16, tagUint16:
		if err := need(2); err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint16(b)
		if tp == tagInt16 {
			return &Node{text: strconv.FormatInt(int64(int16(v)), 10)}, nil
		}
		return &Node{text: strconv.FormatUint(uint64(v), 10)}, nil
	case tagInt32, tagUint32:
		if err := need(4); err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint32(b)
		if tp == tagInt32 {
			return &Node{text: strconv.FormatInt(int64(int32(v)), 10)}, nil
		}
		return &Node{text: strconv.FormatUint(uint64(v), 10)}, nil
	case tagInt64, tagUint64:
		if err := need(8); err != nil {
			return nil, err
		}
		v := binary.LittleEndian.Uint64(b)
		if tp == tagInt64 {
			return &Node{text: strconv.FormatInt(int64(v), 10)}, nil
		}
		return &Node{text: strconv.FormatUint(v, 10)}, nil
	case tagDouble:
		if err := need(8); err != nil {
			return nil, err
		}
		return &Node{text: formatDouble(math.Float64frombits(binary.LittleEndian.Uint64(b)))}, nil
	case tagString:
		s, err := varString(b)
		if err != nil {
			return nil, err
		}
		return &Node{text: quote(s)}, nil
	case tagOpaque:
		if err := need(1); err != nil {
			return nil, err
		}
		s, err := varString(b[1:])
		if err != nil {
			return nil, err
		}
		return &Node{text: opaqueText(b[0], []byte(s))}, nil
	}
	return nil, fmt.Errorf("%w: type %#x", errCorrupt, tp)
}

func decodeContainer(tp byte, b []byte, depth int) (*Node, error) {
	large := tp == tagLargeObject || tp == tagLargeArray
	isObj := tp == tagSmallObject || tp == tagLargeObject
	off := 2
	if large {
		off = 4
	}
	word := func(p int) int {
		if large {
			return int(binary.LittleEndian.Uint32(b[p:]))
		}
		return int(binary.LittleEndian.Uint16(b[p:]))
	}
	if len(b) < 2*off {
		return nil, fmt.Errorf("%w: container header", errCorrupt)
	}
	count, size := word(0), word(off)
	if size > len(b) {
		return nil, fmt.Errorf("%w: container of %d bytes in %d", errCorrupt, size, len(b))
	}
	b = b[:size]
	keyEntry, valEntry := 2+off, 1+off
	header := 2*off + count*valEntry
	if isObj {
		header += count * keyEntry
	}
	if count < 0 || header > size {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errCorrupt, count, size)
	}
	n := &Node{kind: kindArray, elems: make([]*Node, count)}
	if isObj {
		n.kind, n.keys = kindObject, make([]string, count)
		for i := range count {
			e := 2*off + i*keyEntry
			ko, kl := word(e), int(binary.LittleEndian.Uint16(b[e+off:]))
			if ko < header || ko+kl > size {
				return nil, fmt.Errorf("%w: key %d out of bounds", errCorrupt, i)
			}
			n.keys[i] = string(b[ko : ko+kl])
		}
	}
	for i := range count {
		e := 2*off + i*valEntry
		if isObj {
			e += count * keyEntry
		}
		vt := b[e]
		var err error
		switch {
		case vt == tagLiteral || vt == tagInt16 || vt == tagUint16 || (large && (vt == tagInt32 || vt == tagUint32)):
			n.elems[i], err = decodeValue(vt, b[e+1:e+valEntry], depth+1)
		default:
			vo := word(e + 1)
			if vo < header || vo >= size {
				return nil, fmt.Errorf("%w: value %d out of bounds", errCorrupt, i)
			}
			n.elems[i], err = decodeValue(vt, b[vo:], depth+1)
		}
		if err != nil {
			return nil, err
		}
	}
	return n, nil
}

// varString reads a binary JSON string: a variable-length length (7
// bits a byte, at most 5 bytes), then the bytes.
func varString(b []byte) (string, error) {
	var l uint64
	for i := 0; i < 5 && i < len(b); i++ {
		l |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if l > uint64(len(b)-i-1) {
				return "", fmt.Errorf("%w: string of %d bytes in %d", errCorrupt, l, len(b)-i-1)
			}
			return string(b[i+1 : i+1+int(l)]), nil
		}
	}
	return "", fmt.Errorf("%w: string length", errCorrupt)
}
