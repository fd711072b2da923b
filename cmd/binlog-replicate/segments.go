package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// A table whose primary key is all integer columns resumes an interrupted
// copy from its last chunk: the rows copied before the kill stay as of the
// old snapshot position, the rest are copied as of the new one, and the
// table's state records where the key ranges end. Each such range is a
// segment; the range after the last segment is as of the table's current
// position. The stream then applies a change to a row only if the change
// comes after the position of the segment holding the row's key, which
// keeps each row's history exact (see doc.go). Integer keys compare the
// same in Go as in the server; other keys would need the column's
// collation, so those tables are copied again instead.

// segment: rows with a key at or below Upto (and above the previous
// segment's) are as of File:Pos / GTID.
type segment struct {
	Upto []string `json:"upto"`
	File string   `json:"file"`
	Pos  uint64   `json:"pos"`
	GTID string   `json:"gtid"`
}

func encodeSegments(segs []segment) string {
	if len(segs) == 0 {
		return ""
	}
	b, _ := json.Marshal(segs) // strings and numbers only: cannot fail
	return string(b)
}

func decodeSegments(s string) ([]segment, error) {
	if s == "" {
		return nil, nil
	}
	var segs []segment
	if err := json.Unmarshal([]byte(s), &segs); err != nil {
		return nil, fmt.Errorf("snapshot segments %q: %w", s, err)
	}
	return segs, nil
}

// intKeyString renders integer key values as the state stores them.
func intKey(vals []any) ([]string, error) {
	out := make([]string, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case int64:
			out[i] = strconv.FormatInt(x, 10)
		case uint64:
			out[i] = strconv.FormatUint(x, 10)
		default:
			return nil, fmt.Errorf("key value %v (%T) is not an integer", v, v)
		}
	}
	return out, nil
}

func encodeKey(k []string) string { return strings.Join(k, ",") }

func decodeKey(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// keyArgs turns a stored key back into statement arguments.
func keyArgs(k []string) ([]any, error) {
	out := make([]any, len(k))
	for i, s := range k {
		if strings.HasPrefix(s, "-") {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("stored key %q: %w", s, err)
			}
			out[i] = n
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("stored key %q: %w", s, err)
		}
		out[i] = n
	}
	return out, nil
}

// compareKeys orders integer keys column by column, as the server does.
func compareKeys(a, b []string) int {
	for i := range min(len(a), len(b)) {
		x, _ := new(big.Int).SetString(a[i], 10)
		y, _ := new(big.Int).SetString(b[i], 10)
		if c := x.Cmp(y); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}
