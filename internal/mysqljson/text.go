package mysqljson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParseText parses JSON text into a tree: objects take MySQL's key
// order (a later duplicate key wins, as in MySQL), numbers keep their
// text, strings are re-quoted as this package writes them.
func ParseText(s string) (*Node, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	n, err := parseToken(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("data after the JSON value")
	}
	return n, nil
}

func parseToken(d *json.Decoder, depth int) (*Node, error) {
	if depth > 1000 {
		return nil, errors.New("JSON nested too deep")
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		n := &Node{kind: kindArray}
		if t == '{' {
			n.kind = kindObject
		}
		for d.More() {
			var key string
			if n.kind == kindObject {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				key = k.(string)
			}
			v, err := parseToken(d, depth+1)
			if err != nil {
				return nil, err
			}
			if n.kind == kindArray {
				n.elems = append(n.elems, v)
				continue
			}
			if i := n.member(key); i >= 0 {
				n.elems[i] = v
				continue
			}
			at := 0
			for at < len(n.keys) && keyLess(n.keys[at], key) {
				at++
			}
			n.keys, n.elems = insertAt(n.keys, at, key), insertAt(n.elems, at, v)
		}
		if _, err := d.Token(); err != nil {
			return nil, err
		}
		return n, nil
	case string:
		return &Node{text: quote(t)}, nil
	case json.Number:
		return &Node{text: string(t)}, nil
	case bool:
		return &Node{text: strconv.FormatBool(t)}, nil
	case nil:
		return &Node{text: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", t)
}
