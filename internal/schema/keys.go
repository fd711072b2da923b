package schema

import (
	"fmt"
	"strings"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// MariaDB's long unique keys (10.4+): a UNIQUE key on a BLOB or TEXT
// column without a prefix, one longer than the engine's longest key, or
// one declared USING HASH, is a hash of its columns kept in a hidden
// column, DB_ROW_HASH_1, 2, ... in key order. The binlog's row images
// carry those columns after all others (and after a system-versioned
// table's row_start and row_end); information_schema.COLUMNS does not
// list them, its STATISTICS gives the key INDEX_TYPE HASH. So the history
// keeps each UNIQUE key, and whether it is a hash, to know how many
// hidden columns a table has.

// uniqueKey is one UNIQUE key of a table the history holds.
type uniqueKey struct {
	name  string    // as the server names it; "" for a name the history could only guess
	parts []keyPart // columns in key order
	using string    // "hash" for USING HASH
	hash  bool      // a long unique key: a hidden hash column
}

type keyPart struct {
	col    string
	length int // prefix length in characters, 0 for the whole column
}

// HashColumn is the hidden column of the n-th long unique key (from 1).
func HashColumn(n int) Column {
	return Column{Name: fmt.Sprintf("DB_ROW_HASH_%d", n), DataType: "bigint", Type: "bigint unsigned", Unsigned: true,
		Generated: true, Nullable: true}
}

// HashKeys is how many of the table's UNIQUE keys are long unique keys.
func (t *Table) HashKeys() int {
	n := 0
	for _, k := range t.uniques {
		if k.hash {
			n++
		}
	}
	return n
}

// maxKeyBytes is the longest key of an engine before a UNIQUE key becomes
// a hash (MariaDB 10.11): 0 where the history does not know it.
func maxKeyBytes(engine string) int {
	switch strings.ToLower(engine) {
	case "", "innodb":
		return 3072
	case "myisam":
		return 1000
	}
	return 0
}

// classify says whether a UNIQUE key of table t is a long unique key, and
// whether the history is sure of it: near the engine's limit, with a
// column it cannot size or an engine it does not know, it is not.
func (t *Table) classify(k *uniqueKey) (hash, sure bool) {
	engine := strings.ToLower(t.engine)
	if engine == "memory" || engine == "heap" {
		return false, true // hash keys of its own, no hidden column
	}
	limit := maxKeyBytes(engine)
	if k.using == "hash" {
		return true, limit > 0
	}
	// least and most: a charset the history does not know is 1 to 4
	// bytes a character
	least, most, exact := 0, 0, true
	for _, p := range k.parts {
		i := t.find(p.col)
		if i < 0 {
			return false, false
		}
		c := t.cols[i]
		lo, hi := 1, 1 // binary strings
		if c.Charset != "binary" && c.DataType != "binary" && c.DataType != "varbinary" {
			if w := charset.Width(c.Charset); w > 0 {
				lo, hi = w, w
			} else {
				lo, hi = 1, 4
			}
		}
		switch c.DataType {
		case "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob", "json":
			if p.length == 0 {
				return true, limit > 0 || engine == "aria"
			}
			least, most = least+p.length*lo, most+p.length*hi
		case "char", "varchar", "binary", "varbinary":
			n := c.Length
			if p.length > 0 && p.length < n {
				n = p.length
			}
			least, most = least+n*lo, most+n*hi
		default:
			n, sized, ok := fixedKeyBytes(c)
			if !ok {
				return false, false
			}
			least, most, exact = least+n, most+n, exact && sized
		}
	}
	// The server compares the characters times the charset's width, and
	// the sizes of the other types, with the engine's longest key
	// (MariaDB 10.11: VARCHAR(767) utf8mb4 and an INT make 3072 bytes,
	// a B-tree in InnoDB; VARCHAR(769) alone a hash).
	margin := 16 // for types whose size in a key the history only bounds
	if exact {
		margin = 0
	}
	switch {
	case limit == 0:
		return false, most <= 1000-16 // a short key is a B-tree everywhere
	case most <= limit-margin:
		return false, true
	case least > limit+margin:
		return true, true
	}
	return false, false
}

// fixedKeyBytes is what a column of a fixed-size type takes in a key:
// exactly (sized) for the integers, floats, DATE and YEAR, at most for the
// others (the margin in classify covers the difference).
func fixedKeyBytes(c Column) (n int, sized, ok bool) {
	switch c.DataType {
	case "tinyint", "year":
		return 1, true, true
	case "smallint":
		return 2, true, true
	case "mediumint", "date":
		return 3, true, true
	case "int", "float":
		return 4, true, true
	case "bigint", "double":
		return 8, true, true
	case "inet4":
		return 4, false, true
	case "time", "datetime", "timestamp":
		return 8, false, true
	case "decimal":
		return c.Precision/2 + 2, false, true
	case "bit":
		return (c.Length + 7) / 8, false, true
	case "enum":
		return 2, false, true
	case "set":
		return 8, false, true
	case "uuid", "inet6":
		return 16, false, true
	}
	return 0, false, false
}

// uniqueFromConstraint is the UNIQUE key a CREATE TABLE or ALTER TABLE
// constraint declares; nil for another kind, or one on an expression
// (which the history cannot size).
func uniqueFromConstraint(con *ast.Constraint) (*uniqueKey, bool) {
	switch con.Tp {
	case ast.ConstraintUniq, ast.ConstraintUniqKey, ast.ConstraintUniqIndex:
	default:
		return nil, true
	}
	k := &uniqueKey{name: con.Name}
	if con.Option != nil && con.Option.Tp == ast.IndexTypeHash {
		k.using = "hash"
	}
	for _, kp := range con.Keys {
		if kp.Column == nil {
			return nil, false
		}
		k.parts = append(k.parts, keyPart{col: kp.Column.Name.O, length: max(kp.Length, 0)})
	}
	return k, true
}

// addUnique adds a UNIQUE key to t, naming it as the server does when the
// statement does not: after its first column, _2, _3 ... when taken by
// another UNIQUE key (or by another index, which the history does not
// keep: then its name is a guess, "").
func (t *Table) addUnique(k *uniqueKey) {
	if k.name == "" && len(k.parts) > 0 {
		k.name = k.parts[0].col
		for n := 2; t.uniqueIndex(k.name) >= 0; n++ {
			k.name = fmt.Sprintf("%s_%d", k.parts[0].col, n)
		}
		k.name = "?" + k.name // a guess: a plain index may hold the name
	}
	t.uniques = append(t.uniques, *k)
}

func (t *Table) uniqueIndex(name string) int {
	for i, k := range t.uniques {
		if strings.EqualFold(strings.TrimPrefix(k.name, "?"), name) {
			return i
		}
	}
	return -1
}

// dropIndex applies DROP INDEX name: false when the history cannot tell
// whether the index dropped was one of its UNIQUE keys (a guessed name
// is among them).
func (t *Table) dropIndex(name string) bool {
	if i := t.uniqueIndex(name); i >= 0 && !strings.HasPrefix(t.uniques[i].name, "?") {
		t.uniques = append(t.uniques[:i:i], t.uniques[i+1:]...)
		return true
	}
	for _, k := range t.uniques {
		if strings.HasPrefix(k.name, "?") {
			return false
		}
	}
	return true // a plain index, or none
}

// keepsHashKeys reports whether deciding t's UNIQUE keys anew is sure
// to keep each hash key a hash: it is not on a partitioned table whose
// hash key would be a B-tree by its size, which the server may keep a
// hash (a B-tree there must hold the partitioning columns).
func (t *Table) keepsHashKeys() bool {
	if !t.partitioned {
		return true
	}
	for i := range t.uniques {
		k := t.uniques[i]
		if !k.hash {
			continue
		}
		k.using = ""
		if hash, sure := t.classify(&k); !sure || !hash {
			return false
		}
	}
	return true
}

// classifyAll decides for each UNIQUE key of t whether it is a long
// unique key (those in keep are as they were); false when the history is
// not sure of one.
func (t *Table) classifyAll(keep func(k *uniqueKey) bool) bool {
	for i := range t.uniques {
		k := &t.uniques[i]
		if keep != nil && keep(k) {
			continue
		}
		hash, sure := t.classify(k)
		if !sure {
			return false
		}
		k.hash = hash
	}
	return true
}
