package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/binlogstream/binlogstream/internal/tokenbytes"
)

// The snapshot's part of a resume token, version 1:
//
//	version byte (1) | cursor | table count | per table, by name:
//	name | state byte | [key column count | per column: tag byte | value]
//
// strings and byte values are uvarint length + bytes, integers uvarints
// (int64 zigzag). State 0: to read from its first key; 1: a boundary
// key follows (the rows up to it were delivered); 2: done. Tags: 0 NULL,
// 1 int64, 2 uint64, 3 bytes. Tables after the cursor that the caller's
// patterns select and the token does not list are still to read; done
// tables are listed only when they sort after the cursor.
const (
	tokenVersion = 1

	stateFromStart = 0
	stateBound     = 1
	stateDone      = 2

	tagNull   = 0
	tagInt    = 1
	tagUint   = 2
	tagBytes  = 3
	maxTables = 1 << 16
)

// Saved is the progress a token holds.
type Saved struct {
	Cursor string
	Tables []SavedTable
}

// SavedTable is one table's progress in a token. Bound's Cmp is nil: the
// caller rebuilds it from Raw.
type SavedTable struct {
	Name  string
	Bound *Key
	Done  bool
}

// Append appends the encoding of s's progress to b.
func (s *State) Append(b []byte) []byte {
	if !s.listOK {
		s.listed = s.listed[:0]
		for n, t := range s.tables {
			if t.status != done || n > s.cursor {
				s.listed = append(s.listed, listedTable{n, t})
			}
		}
		sort.Slice(s.listed, func(i, j int) bool { return s.listed[i].name < s.listed[j].name })
		s.listOK = true
	}
	b = append(b, tokenVersion)
	b = appendString(b, s.cursor)
	b = binary.AppendUvarint(b, uint64(len(s.listed)))
	for _, l := range s.listed {
		t := l.t
		b = appendString(b, l.name)
		switch {
		case t.status == done:
			b = append(b, stateDone)
		case t.bound == nil:
			b = append(b, stateFromStart)
		default:
			b = append(b, stateBound)
			b = binary.AppendUvarint(b, uint64(len(t.bound.Raw)))
			for _, v := range t.bound.Raw {
				b = appendValue(b, v)
			}
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, tagNull)
	case int64:
		return binary.AppendVarint(append(b, tagInt), x)
	case uint64:
		return binary.AppendUvarint(append(b, tagUint), x)
	case []byte:
		b = binary.AppendUvarint(append(b, tagBytes), uint64(len(x)))
		return append(b, x...)
	case string:
		return appendValue(b, []byte(x))
	}
	panic(fmt.Sprintf("snapshot: key value of type %T in a token", v))
}

// Parse decodes what Append wrote.
func Parse(b []byte) (Saved, error) {
	d := decoder{tokenbytes.Reader{B: b}}
	var s Saved
	if v := d.Byte(); d.Err == "" && v != tokenVersion {
		return s, fmt.Errorf("snapshot state version %d (this build reads %d)", v, tokenVersion)
	}
	s.Cursor = d.String()
	n := d.Uvarint()
	if n > maxTables || n > uint64(len(d.B)) {
		d.Fail("table count out of range")
	}
	prev := ""
	for i := uint64(0); i < n && d.Err == ""; i++ {
		t := SavedTable{Name: d.String()}
		if i > 0 && t.Name <= prev {
			d.Fail("tables out of order")
		}
		prev = t.Name
		switch d.Byte() {
		case stateFromStart:
		case stateDone:
			t.Done = true
			if t.Name <= s.Cursor {
				d.Fail("done table at or before the cursor")
			}
		case stateBound:
			k := d.Uvarint()
			if k == 0 || k > uint64(len(d.B)) {
				d.Fail("key column count out of range")
				break
			}
			raw := make([]any, 0, k)
			for range k {
				raw = append(raw, d.value())
			}
			t.Bound = &Key{Raw: raw}
		default:
			d.Fail("unknown table state")
		}
		s.Tables = append(s.Tables, t)
	}
	if d.Err == "" && len(d.B) != 0 {
		d.Fail("trailing bytes")
	}
	if d.Err != "" {
		return Saved{}, errors.New("snapshot state: " + d.Err)
	}
	return s, nil
}

// Restore makes a State with the progress of a token. Each boundary's
// Cmp must be filled in (from Raw) before the state compares keys.
func Restore(cfg Config, saved Saved, at Pos) *State {
	s := New(cfg)
	s.cursor = saved.Cursor
	for _, t := range saved.Tables {
		switch {
		case t.Done:
			s.tables[t.Name] = &table{status: done}
		case t.Bound != nil:
			k := *t.Bound
			s.tables[t.Name] = &table{status: active, bound: &k, from: at}
		default:
			s.tables[t.Name] = &table{}
		}
	}
	return s
}

// SetBoundCmp sets the comparable form of table name's boundary (after
// Restore, from its Raw values).
func (s *State) SetBoundCmp(name string, cmp []any) {
	if t := s.tables[name]; t != nil && t.bound != nil {
		t.bound.Cmp = cmp
	}
}

// decoder reads the state's bytes; Parse turns its failure into an error.
type decoder struct{ tokenbytes.Reader }

func (d *decoder) value() any {
	switch d.Byte() {
	case tagNull:
		return nil
	case tagInt:
		return d.Varint()
	case tagUint:
		return d.Uvarint()
	case tagBytes:
		return d.Bytes()
	}
	d.Fail("unknown key value tag")
	return nil
}
