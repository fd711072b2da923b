package ddl

import "testing"

func TestDropsOrRenames(t *testing.T) {
	for sql, want := range map[string]bool{
		"DROP TABLE app.gone":                            true,
		"drop table if exists `a`, b":                    true,
		"/* c */ DROP TEMPORARY TABLE t":                 true,
		"RENAME TABLE a TO b, c TO d":                    true,
		"ALTER TABLE t RENAME TO u":                      true,
		"ALTER TABLE t RENAME u":                         true,
		"ALTER TABLE t ADD COLUMN x INT, RENAME AS u":    true,
		"ALTER TABLE t RENAME COLUMN a TO b":             false,
		"ALTER TABLE t RENAME INDEX i TO j":              false,
		"ALTER TABLE t RENAME KEY i TO j":                false,
		"ALTER TABLE t ADD COLUMN w INT":                 false,
		"CREATE OR REPLACE TABLE t (id INT)":             true,
		"CREATE TABLE t (id INT)":                        false,
		"CREATE TABLE IF NOT EXISTS t (id INT)":          false,
		"TRUNCATE TABLE t":                               false,
		"DROP DATABASE app":                              false,
		"INSERT INTO t VALUES (1)":                       false,
		"ALTER TABLE t COMMENT 'RENAME TO x', ADD w INT": false,
	} {
		if got := DropsOrRenames(sql); got != want {
			t.Errorf("DropsOrRenames(%q) = %v, want %v", sql, got, want)
		}
	}
}
