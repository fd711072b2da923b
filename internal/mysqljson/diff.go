package mysqljson

import (
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Change is one diff of a binary diff vector, its value decoded.
type Change struct {
	Op    replication.JsonDiffOperation
	Path  string
	Value *Node // nil for Remove
}

// ReadDiffs reads the diffs of a partial JSON value (after its length
// prefix): per diff an operation byte, a length-encoded path and, unless
// the operation is Remove, a length-encoded binary JSON value (MySQL's
// Json_diff_vector::read_binary).
func ReadDiffs(b []byte) ([]Change, error) {
	var out []Change
	for len(b) > 0 {
		op := replication.JsonDiffOperation(b[0])
		if op > replication.JsonDiffOperationRemove {
			return nil, fmt.Errorf("%w: diff %d: operation %d", replication.ErrCorruptedJSONDiff, len(out), b[0])
		}
		b = b[1:]
		path, rest, err := lenencBytes(b)
		if err != nil {
			return nil, fmt.Errorf("%w: diff %d: path: %v", replication.ErrCorruptedJSONDiff, len(out), err)
		}
		d := Change{Op: op, Path: string(path)}
		b = rest
		if op != replication.JsonDiffOperationRemove {
			val, rest, err := lenencBytes(b)
			if err != nil {
				return nil, fmt.Errorf("%w: diff %d (%s): value: %v", replication.ErrCorruptedJSONDiff, len(out), d.Path, err)
			}
			if d.Value, err = DecodeBinary(val); err != nil {
				return nil, fmt.Errorf("%w: diff %d (%s): %v", replication.ErrCorruptedJSONDiff, len(out), d.Path, err)
			}
			b = rest
		}
		out = append(out, d)
	}
	return out, nil
}

func lenencBytes(b []byte) (v, rest []byte, err error) {
	n, k, ok := lenencInt(b)
	if !ok || n > uint64(len(b)-k) {
		return nil, nil, errors.New("truncated")
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// lenencInt reads a length-encoded integer (net_field_length); ok is
// false when b is too short or holds the NULL marker.
func lenencInt(b []byte) (n uint64, k int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch b[0] {
	case 0xfb, 0xff:
		return 0, 0, false
	case 0xfc:
		k = 3
	case 0xfd:
		k = 4
	case 0xfe:
		k = 9
	default:
		return uint64(b[0]), 1, true
	}
	if len(b) < k {
		return 0, 0, false
	}
	for i := k - 1; i >= 1; i-- {
		n = n<<8 | uint64(b[i])
	}
	return n, k, true
}

// Diff is one diff as text: the value in the form Node.String writes, ""
// for Remove.
type Diff struct {
	Op    replication.JsonDiffOperation
	Path  string
	Value string
}

// String writes the operation, the path and, unless it is Remove, the value.
func (d Diff) String() string {
	if d.Op == replication.JsonDiffOperationRemove {
		return fmt.Sprintf("%s %s", d.Op, d.Path)
	}
	return fmt.Sprintf("%s %s %s", d.Op, d.Path, d.Value)
}

// Diff gives c as text; its Value is rendered only with withValue.
func (c Change) Diff(withValue bool) Diff {
	d := Diff{Op: c.Op, Path: c.Path}
	if c.Value != nil && withValue {
		d.Value = c.Value.String()
	}
	return d
}

// ApplyBinary applies changes, in order, to before, a binary JSON
// document, and returns the document after them as text; the text of the
// document before them is rendered only with withBefore, and is returned
// even when a change does not apply.
func ApplyBinary(before []byte, changes []Change, withBefore bool) (beforeText, after string, err error) {
	doc, err := DecodeBinary(before)
	if err != nil {
		return "", "", fmt.Errorf("before image: %w", err)
	}
	if withBefore {
		beforeText = doc.String()
	}
	for k, c := range changes {
		if err := doc.Apply(c.Op, c.Path, c.Value); err != nil {
			return beforeText, "", fmt.Errorf("diff %d of %d: %w", k+1, len(changes), err)
		}
	}
	return beforeText, doc.String(), nil
}

// ApplyText applies diffs, in order, to doc, a JSON document as text in
// any key order and spacing, with a MySQL replica's rules, and returns the
// result as Node.String writes it.
func ApplyText(doc string, diffs []Diff) (string, error) {
	root, err := ParseText(doc)
	if err != nil {
		return "", fmt.Errorf("document: %w", err)
	}
	for k, d := range diffs {
		var val *Node
		if d.Op != replication.JsonDiffOperationRemove {
			if val, err = ParseText(d.Value); err != nil {
				return "", fmt.Errorf("diff %d of %d (%s): %w", k+1, len(diffs), d.Path, err)
			}
		}
		if err := root.Apply(d.Op, d.Path, val); err != nil {
			return "", fmt.Errorf("diff %d of %d: %w", k+1, len(diffs), err)
		}
	}
	return root.String(), nil
}
