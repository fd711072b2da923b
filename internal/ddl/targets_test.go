package ddl

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTargets: the tables a statement names, a RENAME's old and new
// names in pairs, an ALTER's table and the name it is renamed to; a
// column, index or key an ALTER renames is not a table.
func TestTargets(t *testing.T) {
	for sql, want := range map[string][]Key{
		"DROP TABLE a, d2.b":                              {{"d", "a"}, {"d2", "b"}},
		"RENAME TABLE a TO b, d2.c TO d":                  {{"d", "a"}, {"d", "b"}, {"d2", "c"}, {"d", "d"}},
		"ALTER TABLE t RENAME TO u":                       {{"d", "t"}, {"d", "u"}},
		"ALTER TABLE t ADD x INT, RENAME AS d2.u":         {{"d", "t"}, {"d2", "u"}},
		"ALTER TABLE t RENAME u":                          {{"d", "t"}, {"d", "u"}},
		"ALTER TABLE t RENAME COLUMN a TO b":              {{"d", "t"}},
		"ALTER TABLE t RENAME INDEX i TO j":               {{"d", "t"}},
		"alter table t rename key i to j":                 {{"d", "t"}},
		"ALTER TABLE t RENAME COLUMN a TO b, RENAME TO u": {{"d", "t"}, {"d", "u"}},
		"CREATE TABLE `x`.`y` (id INT)":                   {{"x", "y"}},
		"ALTER TABLE t ADD COLUMN w INT":                  {{"d", "t"}},
	} {
		assert.Equal(t, want, Targets("d", sql), sql)
	}
}
