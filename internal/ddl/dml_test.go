package ddl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsDML(t *testing.T) {
	yes := []string{
		"INSERT INTO t VALUES (1)",
		"insert into t values (1)",
		"  /* c */ REPLACE t SET a=1",
		"UPDATE t SET a=1",
		"DELETE FROM t",
		"LOAD DATA INFILE '/x' INTO TABLE t",
		"LOAD XML INFILE '/x' INTO TABLE t",
		"WITH c AS (SELECT 1) UPDATE t, c SET t.a=1",
		"/*!40000 INSERT INTO t VALUES (1) */",
		"/*M!100100 DELETE FROM t */",
		"CREATE TABLE t2 SELECT * FROM t",
		"create table t2 (a int) as select 1",
		"CREATE TABLE IF NOT EXISTS `t2` ENGINE=InnoDB SELECT a FROM t",
		"-- note\nUPDATE t SET a=1",
	}
	no := []string{
		"BEGIN", "COMMIT", "XA START 'x'", "SAVEPOINT a", "ROLLBACK TO a",
		"CREATE TABLE t (a int)",
		"CREATE TABLE `select` (a int)",
		"CREATE TABLE t (a varchar(10) DEFAULT 'select')",
		"CREATE VIEW v AS SELECT 1",
		"CREATE DEFINER=`root`@`localhost` VIEW v AS SELECT 1",
		"CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = (SELECT 1)",
		"CREATE DEFINER=`root`@`%` PROCEDURE p() SELECT 1",
		"ALTER TABLE t ADD COLUMN updated int",
		"TRUNCATE TABLE t",
		"INSERTX", "UPDATED", "deleted_rows",
		"GRANT INSERT ON db.* TO u",
		"SET @a = 1",
		"DROP TABLE t",
		"",
	}
	for _, q := range yes {
		assert.True(t, IsDML([]byte(q)), q)
	}
	for _, q := range no {
		assert.False(t, IsDML([]byte(q)), q)
	}
}

func TestDMLTargets(t *testing.T) {
	cases := []struct {
		sql  string
		want []Key
	}{
		{"INSERT INTO t VALUES (1)", []Key{{"app", "t"}}},
		{"INSERT INTO other.t SELECT * FROM app.big", []Key{{"other", "t"}}},
		{"REPLACE INTO `a b`.`c``d` SET x=1", []Key{{"a b", "c`d"}}},
		{"UPDATE t SET a=1 WHERE id IN (SELECT id FROM big)", []Key{{"app", "t"}}},
		{"UPDATE app.big b JOIN log.audit a ON a.id=b.id SET a.n=a.n+1", []Key{{"log", "audit"}}},
		{"UPDATE big, audit SET audit.n=big.n", []Key{{"app", "audit"}}},
		{"UPDATE big b, audit a SET n=1", []Key{{"app", "big"}, {"app", "audit"}}},
		{"DELETE FROM t WHERE a=1", []Key{{"app", "t"}}},
		{"DELETE a FROM log.audit a JOIN app.big b ON a.id=b.id", []Key{{"log", "audit"}}},
		{"DELETE FROM a USING log.audit a JOIN big b ON a.id=b.id", []Key{{"log", "audit"}}},
		{"LOAD DATA INFILE '/tmp/x' INTO TABLE ld.t", []Key{{"ld", "t"}}},
		{"CREATE TABLE t2 SELECT * FROM t", []Key{{"app", "t2"}}},
		{"WITH c AS (SELECT 1 AS a) UPDATE t JOIN c SET t.a = c.a", []Key{{"app", "t"}}},
	}
	for _, c := range cases {
		got, ok := DMLTargets("app", c.sql, 0)
		require.True(t, ok, c.sql)
		assert.Equal(t, c.want, got, c.sql)
	}
	_, ok := DMLTargets("app", "UPDATE t SET a = 1 RETURNING nonsense(", 0)
	assert.False(t, ok, "a statement the parser refuses cannot be told not to change a table")
}
