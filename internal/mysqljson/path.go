package mysqljson

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// pathLeg is one leg of a MySQL JSON path without wildcards: a member
// name, or an array cell counted from the start or (last-N) from the end.
type pathLeg struct {
	member  string
	isCell  bool
	index   int
	fromEnd bool
}

// parsePath parses the paths a diff carries: $ followed by .name,
// ."quoted name" and [N], [last], [last-N] legs. Wildcards and ranges
// cannot occur in a diff and are refused.
func parsePath(p string) ([]pathLeg, error) {
	s := strings.TrimSpace(p)
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("JSON path %q does not start with $", p)
	}
	s = s[1:]
	var legs []pathLeg
	for {
		s = strings.TrimLeft(s, " \t\n\r")
		if s == "" {
			return legs, nil
		}
		switch s[0] {
		case '.':
			s = strings.TrimLeft(s[1:], " \t\n\r")
			if s == "" {
				return nil, fmt.Errorf("JSON path %q ends in a dot", p)
			}
			if s[0] == '"' {
				end := 1
				for end < len(s) && s[end] != '"' {
					if s[end] == '\\' {
						end++
					}
					end++
				}
				if end >= len(s) {
					return nil, fmt.Errorf("JSON path %q: unterminated quoted member", p)
				}
				var name string
				if err := json.Unmarshal([]byte(s[:end+1]), &name); err != nil {
					return nil, fmt.Errorf("JSON path %q: member %s: %v", p, s[:end+1], err)
				}
				legs, s = append(legs, pathLeg{member: name}), s[end+1:]
				continue
			}
			end := strings.IndexAny(s, ".[ \t\n\r")
			if end < 0 {
				end = len(s)
			}
			name := s[:end]
			if name == "" || strings.ContainsAny(name, "*\"") {
				return nil, fmt.Errorf("JSON path %q: member %q is not a plain name", p, name)
			}
			legs, s = append(legs, pathLeg{member: name}), s[end:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("JSON path %q: unterminated array cell", p)
			}
			cell := strings.TrimSpace(s[1:end])
			s = s[end+1:]
			leg := pathLeg{isCell: true}
			if rest, ok := strings.CutPrefix(cell, "last"); ok {
				leg.fromEnd = true
				rest = strings.TrimSpace(rest)
				if rest != "" {
					num, ok := strings.CutPrefix(rest, "-")
					if !ok {
						return nil, fmt.Errorf("JSON path %q: array cell [%s]", p, cell)
					}
					cell = strings.TrimSpace(num)
				} else {
					cell = "0"
				}
			}
			n, err := strconv.ParseUint(cell, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("JSON path %q: array cell [%s] is not an index", p, cell)
			}
			leg.index = int(n)
			legs = append(legs, leg)
		default:
			return nil, fmt.Errorf("JSON path %q: unexpected %q", p, s[0])
		}
	}
}

// position resolves an array cell in an array of n elements as MySQL's
// Json_array_index does: from the start it is clamped to n, from the end
// it is 0 when out of range.
func (l pathLeg) position(n int) (pos int, inBounds bool) {
	if l.fromEnd {
		if l.index < n {
			return n - l.index - 1, true
		}
		return 0, false
	}
	return min(l.index, n), l.index < n
}

// seek follows legs without auto-wrapping (MySQL's seek_exact_path).
func (n *Node) seek(legs []pathLeg) *Node {
	for _, l := range legs {
		switch {
		case n.kind == kindArray && l.isCell:
			p, ok := l.position(len(n.elems))
			if !ok {
				return nil
			}
			n = n.elems[p]
		case n.kind == kindObject && !l.isCell:
			i := n.member(l.member)
			if i < 0 {
				return nil
			}
			n = n.elems[i]
		default:
			return nil
		}
	}
	return n
}

// Apply applies one diff to the document n in place, as a MySQL replica
// does: Replace needs the path to exist, Insert needs its parent to exist
// (an object member must be new; an array cell past the end appends),
// Remove needs the path to exist. The root itself cannot be changed.
func (n *Node) Apply(op replication.JsonDiffOperation, path string, val *Node) error {
	legs, err := parsePath(path)
	if err != nil {
		return err
	}
	if len(legs) == 0 {
		return fmt.Errorf("%s of the document root", op)
	}
	parent := n.seek(legs[:len(legs)-1])
	if parent == nil {
		return fmt.Errorf("%s %s: the parent of the path is not in the document", op, path)
	}
	last := legs[len(legs)-1]
	switch {
	case parent.kind == kindObject && !last.isCell:
		i := parent.member(last.member)
		switch op {
		case replication.JsonDiffOperationReplace:
			if i < 0 {
				return fmt.Errorf("Replace %s: no such member", path)
			}
			parent.elems[i] = val
		case replication.JsonDiffOperationInsert:
			if i >= 0 {
				return fmt.Errorf("Insert %s: the member exists", path)
			}
			at := 0
			for at < len(parent.keys) && keyLess(parent.keys[at], last.member) {
				at++
			}
			parent.keys = insertAt(parent.keys, at, last.member)
			parent.elems = insertAt(parent.elems, at, val)
		case replication.JsonDiffOperationRemove:
			if i < 0 {
				return fmt.Errorf("Remove %s: no such member", path)
			}
			parent.keys = append(parent.keys[:i], parent.keys[i+1:]...)
			parent.elems = append(parent.elems[:i], parent.elems[i+1:]...)
		default:
			return fmt.Errorf("unknown JSON diff operation %d", op)
		}
	case parent.kind == kindArray && last.isCell:
		p, ok := last.position(len(parent.elems))
		switch op {
		case replication.JsonDiffOperationReplace:
			if !ok {
				return fmt.Errorf("Replace %s: no such array cell", path)
			}
			parent.elems[p] = val
		case replication.JsonDiffOperationInsert:
			parent.elems = insertAt(parent.elems, p, val)
		case replication.JsonDiffOperationRemove:
			if !ok {
				return fmt.Errorf("Remove %s: no such array cell", path)
			}
			parent.elems = append(parent.elems[:p], parent.elems[p+1:]...)
		default:
			return fmt.Errorf("unknown JSON diff operation %d", op)
		}
	default:
		return fmt.Errorf("%s %s: the path does not match the document", op, path)
	}
	return nil
}
