package binlogstream_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// TestIntegrationSchemaHistoryRandomDDL: random DDL statements over a few
// tables, run on MariaDB; after each statement the server accepted, the
// schema history fed the same statements must hold every table exactly
// as information_schema has it (names, types, charsets, collations it
// knows, primary key), or hold it unknown (never wrong). Statements the
// server refuses are not in a binlog and are skipped.
// BINLOGSTREAM_DDL_STATEMENTS and BINLOGSTREAM_DDL_SEED run it longer or
// on another seed.
func TestIntegrationSchemaHistoryRandomDDL(t *testing.T) {
	mariadb.Require(t)
	t.Parallel()
	n, seed := 400, uint64(1)
	if v, err := strconv.Atoi(os.Getenv("BINLOGSTREAM_DDL_STATEMENTS")); err == nil {
		n = v
	}
	if v, err := strconv.ParseUint(os.Getenv("BINLOGSTREAM_DDL_SEED"), 10, 64); err == nil {
		seed = v
	}
	// The stream below checks each Table_map against the history: under
	// MINIMAL row metadata the charsets too (odd seeds), under NO_LOG
	// (MariaDB 10.11's default) the types and lengths alone.
	metadata := map[bool]string{true: "MINIMAL", false: "NO_LOG"}[seed%2 == 1]
	s := mariadb.Start(t, mariadb.Options{ExtraArgs: []string{"--binlog-row-metadata=" + metadata}})
	s.Exec(t, "CREATE DATABASE r", "CREATE DATABASE r2")
	conn := s.Conn(t, "root")
	_, err := conn.Execute("USE r")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src := itSource(t, s).(*binlogstream.SyncerSource)
	h := binlogstream.NewSchemaHistoryForTest("utf8mb4")
	require.NoError(t, h.Apply("", "CREATE DATABASE r"))
	require.NoError(t, h.Apply("", "CREATE DATABASE r2"))
	// The history reads what the binlog has, which is not always what ran:
	// a CREATE OR REPLACE that fails has dropped the table, and the
	// binlog says so.
	pos := masterPos(t, s)
	from := pos
	var logged, loggedAt []string
	follow := func(stmt string, failed bool) {
		r, err := conn.Execute(fmt.Sprintf("SHOW BINLOG EVENTS IN '%s' FROM %d", pos.File, pos.Offset))
		require.NoError(t, err)
		for i := range r.RowNumber() {
			typ, _ := r.GetString(i, 2)
			end, _ := r.GetUint(i, 4)
			info, _ := r.GetString(i, 5)
			pos.Offset = end
			if typ != "Query" {
				continue
			}
			logged, loggedAt = append(logged, info), append(loggedAt, fmt.Sprintf("%d %s", end, info))
			// A statement that failed but changed something is logged with
			// its error (the list does not show the code: any will do);
			// what the server generated for it (a DROP TABLE) is not.
			code := uint16(0)
			if failed && strings.HasSuffix(info, stmt) {
				code = 1
			}
			require.NoError(t, h.ApplyListed(info, code), "history of:\n%s", strings.Join(logged, ";\n"))
		}
	}

	g := &ddlGen{r: rand.New(rand.NewPCG(seed, seed^0x5eed)), tables: map[string][]string{}}
	var ran []string
	accepted, unknownAt, inserted := 0, 0, 0
	refusals, whys := map[string]int{}, map[string]int{}
	for range n {
		stmt := g.statement()
		_, err := conn.Execute(stmt)
		follow(stmt, err != nil)
		if err != nil {
			refusals[strings.SplitN(err.Error(), ":", 2)[0]]++
			continue // refused
		}
		accepted++
		ran = append(ran, stmt)
		snap, err := src.SchemaSnapshot(ctx, []string{"r"})
		require.NoError(t, err)
		g.learn(snap)
		diffs, unknown := h.Diff(snap, "r")
		if len(diffs) > 0 {
			if f := os.Getenv("BINLOGSTREAM_DDL_DUMP"); f != "" {
				_ = os.WriteFile(f, []byte(strings.Join(ran, ";\n")+";\n"), 0o644)
			}
			for _, name := range g.names() {
				if r, err := conn.Execute("SHOW CREATE TABLE `" + name + "`"); err == nil && r.RowNumber() > 0 {
					def, _ := r.GetString(0, 1)
					t.Logf("on the server:\n%s", def)
				}
			}
			t.Fatalf("after %d statements (seed %d), the history differs from the server:\n%s\nstatements:\n%s",
				accepted, seed, strings.Join(diffs, "\n"), strings.Join(logged[max(0, len(logged)-12):], ";\n"))
		}
		if len(unknown) > 0 {
			unknownAt++
			for _, u := range unknown {
				why := u[strings.Index(u, ": ")+2:]
				why, _, _ = strings.Cut(why, ":")
				if whys[why] == 0 {
					t.Logf("first unknown (%s) after: %s", why, stmt)
				}
				whys[why]++
			}
		}
		// A row in every table, for the stream below.
		for _, name := range g.names() {
			if r, err := conn.Execute("INSERT IGNORE INTO `" + name + "` () VALUES ()"); err == nil {
				inserted += int(r.AffectedRows) // 0 where a key has the row already
			}
		}
	}
	follow("", false)
	if f := os.Getenv("BINLOGSTREAM_DDL_DUMP"); f != "" {
		_ = os.WriteFile(f, []byte(strings.Join(logged, ";\n")+";\n"), 0o644)
		_ = os.WriteFile(f+".pos", []byte(strings.Join(loggedAt, "\n")+"\n"), 0o644)
	}

	// The same binlog through the streamer, rows decoded with the schema
	// history of its own DDL (binlog_row_metadata NO_LOG): no table may
	// fail the Table_map check, and each row is named as its table was.
	target := masterPos(t, s)
	store := binlogstream.NewFileSchemaStore(filepath.Join(t.TempDir(), "h"))
	defer store.Close()
	st, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src, Start: binlogstream.StartAt(from),
		Schema: &binlogstream.SchemaConfig{Store: store, Snapshot: true, Databases: []string{"r"}}})
	require.NoError(t, err)
	rows, unknownRows := 0, 0
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	st.AddListener(func(_ context.Context, ev binlogstream.Event) error {
		if re, ok := ev.Event.(*replication.RowsEvent); ok && ev.Table.Schema == "r" {
			rows += len(re.Rows)
			if !ev.Table.Known() {
				unknownRows += len(re.Rows)
			}
			for i := range re.Rows {
				_ = ev.RowValues(i)
			}
		}
		if ev.End.Compare(target) >= 0 {
			scancel()
		}
		return nil
	})
	require.ErrorIs(t, st.Run(sctx), context.Canceled, "streaming the random DDL's binlog")
	t.Logf("streamed %d rows of %d inserted (%s metadata), %d of them of unknown tables", rows, inserted, metadata, unknownRows)
	require.GreaterOrEqual(t, rows, inserted, "CREATE ... SELECT copies rows too")
	t.Logf("seed %d: %d of %d statements ran on the server; %d left a table unknown; refused: %v", seed, accepted, n, unknownAt, refusals)
	for why, n := range whys {
		t.Logf("unknown (%d times after a statement): %s", n, why)
	}
	require.Greater(t, accepted, n/3, "the generator's statements should mostly run")
}

// ddlGen makes random DDL over tables t0..t3 whose columns it learns from
// the server after each statement.
type ddlGen struct {
	r      *rand.Rand
	tables map[string][]string // table -> column names, as the server has them
}

func (g *ddlGen) learn(snap *binlogstream.SchemaSnapshot) {
	g.tables = map[string][]string{}
	for _, st := range snap.Tables {
		if st.Schema != "r" {
			continue
		}
		var names []string
		for _, c := range st.Columns {
			names = append(names, c.Name)
		}
		g.tables[st.Name] = names
	}
}

func (g *ddlGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

// names are the tables that exist, in order.
func (g *ddlGen) names() []string {
	var names []string
	for name := range g.tables {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

var ddlGenNames = []string{"a", "b", "c", "d", "id", "x y", "nchar", "Ü", "row_start", "national"}

var ddlGenCharsets = []string{"", "", "", " CHARACTER SET latin1", " CHARACTER SET utf8mb3", " CHARSET ascii", " CHARACTER SET cp1251",
	" CHARACTER SET utf16", " COLLATE utf8mb4_unicode_ci", " CHARACTER SET latin1 COLLATE latin1_bin", " COLLATE latin1_swedish_nopad_ci",
	" CHARACTER SET utf8mb4 COLLATE utf8mb4_uca1400_ai_ci", " BINARY"}

func (g *ddlGen) name() string { return "`" + g.pick(ddlGenNames) + "`" }

func (g *ddlGen) existing(table string) string {
	cols := g.tables[table]
	if len(cols) == 0 {
		return g.name()
	}
	return "`" + g.pick(cols) + "`"
}

func (g *ddlGen) table() string { return fmt.Sprintf("t%d", g.r.IntN(4)) }

func (g *ddlGen) colType() string {
	cs := func() string { return g.pick(ddlGenCharsets) }
	switch g.r.IntN(26) {
	case 0:
		return "INT"
	case 1:
		return "BIGINT UNSIGNED"
	case 2:
		return fmt.Sprintf("VARCHAR(%d)%s", 1+g.r.IntN(300), cs())
	case 3:
		return fmt.Sprintf("CHAR(%d)%s", g.r.IntN(20), cs())
	case 4:
		return g.pick([]string{"TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "TEXT(1000)"}) + cs()
	case 5:
		return fmt.Sprintf("DECIMAL(%d,%d)", 10+g.r.IntN(20), g.r.IntN(10))
	case 6:
		return fmt.Sprintf("DATETIME(%d)", g.r.IntN(7))
	case 7, 8:
		// not utf16: CONVERT TO utf8mb4 turns a utf16 member 'p' into
		// '\0p' (MariaDB 10.11)
		m := cs()
		for strings.Contains(m, "utf16") {
			m = cs()
		}
		return g.pick([]string{"ENUM('x','y','z')", "SET('p','q')"}) + m
	case 9:
		return fmt.Sprintf("BIT(%d)", 1+g.r.IntN(64))
	case 10:
		return g.pick([]string{"BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "VARBINARY(12)", "BINARY(4)"})
	case 11:
		return "JSON"
	case 12:
		return g.pick([]string{"UUID", "INET6", "INET4", "POINT", "GEOMETRY"})
	case 13:
		return g.pick([]string{"DOUBLE", "FLOAT", "FLOAT(30)", "REAL", "YEAR", "DATE", "TIME(3)", "TIMESTAMP(2) NULL", "BOOL", "SMALLINT", "MEDIUMINT UNSIGNED"})
	case 14:
		return g.pick([]string{"NCHAR(3)", "NATIONAL VARCHAR(7)", "NCHAR VARYING(2)", "CHAR(3) BYTE", "TEXT ASCII", "CHAR(2) UNICODE"})
	case 15:
		return fmt.Sprintf("VARCHAR(%d)", 100+g.r.IntN(20000)) // may not fit a row in strict mode
	case 16:
		return "INT INVISIBLE"
	case 17:
		return "INT AS (1 + 1) " + g.pick([]string{"VIRTUAL", "PERSISTENT", "STORED"})
	case 18:
		return "TEXT COMPRESSED" + cs()
	case 19:
		return "INT NOT NULL DEFAULT (2 * 3)"
	case 20:
		return "SERIAL"
	case 21, 22:
		return g.pick([]string{"DECIMAL", "NUMERIC(5)", "FIXED(6,2)", "DEC(65,30)", "CHAR", "NATIONAL CHAR", "TEXT(70000)", "BLOB(300)",
			"VARCHAR(5) BINARY CHARACTER SET latin1", "LONG VARCHAR", "LONG VARBINARY", "LONG", "POINT REF_SYSTEM_ID=4326",
			"TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP", "INT ZEROFILL", "DOUBLE(10,2)",
			"FLOAT(7,3) UNSIGNED", "BIT", "BOOLEAN", "TINYINT(1)", "INT(11) UNSIGNED", "MEDIUMINT(4) ZEROFILL",
			"ENUM('a','b') CHARACTER SET latin1 COLLATE latin1_bin", "SET('x') BINARY", "MEDIUMTEXT COLLATE utf8mb4_bin",
			"VARCHAR(10) COLLATE utf8mb4_uca1400_ai_ci", "CHAR(5) COLLATE latin1_swedish_nopad_ci", "TINYTEXT CHARSET utf8mb3",
			"VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_520_ci", "DATETIME(6) DEFAULT NOW(6)", "TIME", "YEAR(4)",
			"VARCHAR(16383)", "VARCHAR(21844) CHARSET utf8mb3", "CHAR(255) CHARSET utf8mb4", "BINARY", "VARBINARY(65532)",
			"INT COMMENT 'national char, nchar(3)'", "INT NULL DEFAULT NULL", "VARCHAR(20) NOT NULL DEFAULT ''",
			"INET6 NOT NULL", "UUID DEFAULT UUID()", "INT GENERATED ALWAYS AS (2) VIRTUAL INVISIBLE"})
	default:
		return g.pick([]string{"INT", "VARCHAR(10)", "TINYINT UNSIGNED", "DATETIME"})
	}
}

// unique is a UNIQUE key on cols (names from the pool when nil): on a
// column whole or by a prefix, named or not, USING HASH or not.
func (g *ddlGen) unique(cols []string) string {
	col := g.name()
	if len(cols) > 0 {
		col = "`" + g.pick(cols) + "`"
	}
	part := col + g.pick([]string{"", "", "(10)", "(800)"})
	if g.r.IntN(3) == 0 {
		part += ", " + g.name()
	}
	return "UNIQUE " + g.pick([]string{"", "KEY uk ", "KEY uk2 "}) + "(" + part + ")" + g.pick([]string{"", "", " USING HASH", " USING BTREE"})
}

func (g *ddlGen) position(table string) string {
	switch g.r.IntN(4) {
	case 0:
		return " FIRST"
	case 1:
		return " AFTER " + g.existing(table)
	}
	return ""
}

func (g *ddlGen) statement() string {
	t := g.table()
	choice := g.r.IntN(20)
	if _, ok := g.tables[t]; !ok && choice > 4 {
		if len(g.tables) == 0 || g.r.IntN(3) == 0 {
			choice = 0 // mostly alter tables that exist
		} else {
			t = g.pick(g.names())
		}
	}
	switch choice {
	case 5:
		if g.r.IntN(3) == 0 {
			return "ALTER DATABASE r " + g.pick([]string{"CHARACTER SET latin1", "CHARACTER SET utf8mb4", "COLLATE utf8mb4_unicode_ci",
				"CHARACTER SET cp1251 COLLATE cp1251_bin", "DEFAULT CHARSET utf8mb3"})
		}
	case 6:
		switch g.r.IntN(4) {
		case 0:
			return "CREATE TABLE " + t + " AS SELECT * FROM " + g.table()
		case 1:
			return "CREATE OR REPLACE TABLE " + t + " SELECT 1 AS a, 'x' AS " + g.name() + ", NOW(3) AS d, 2.5 AS e"
		case 2:
			return "RENAME TABLE " + t + " TO r2." + t
		default:
			return "RENAME TABLE r2." + t + " TO " + g.table()
		}
	case 7:
		if g.r.IntN(2) == 0 {
			return "SET SESSION sql_mode = " + g.pick([]string{"''", "DEFAULT"})
		}
	}
	switch choice {
	case 0, 1:
		var defs []string
		for range 1 + g.r.IntN(5) {
			defs = append(defs, g.name()+" "+g.colType())
		}
		if g.r.IntN(2) == 0 {
			defs = append(defs, "PRIMARY KEY ("+g.name()+")")
		}
		if g.r.IntN(3) == 0 {
			defs = append(defs, g.unique(nil))
		}
		verb := g.pick([]string{"CREATE TABLE", "CREATE OR REPLACE TABLE", "CREATE TABLE IF NOT EXISTS"})
		// not utf16 for the table: its ENUM and SET columns would have
		// utf16 members (see colType)
		opt := g.pick(append([]string{"", " WITH SYSTEM VERSIONING"}, ddlGenCharsets...))
		for strings.Contains(opt, "utf16") {
			opt = g.pick(ddlGenCharsets)
		}
		return verb + " " + t + " (" + strings.Join(defs, ", ") + ")" + opt
	case 2:
		return "DROP TABLE IF EXISTS " + t
	case 3:
		u := g.table()
		if u == t {
			return "RENAME TABLE " + t + " TO tmp, tmp TO " + t
		}
		return "RENAME TABLE " + t + " TO tmp, " + u + " TO " + t + ", tmp TO " + u
	case 4:
		switch g.r.IntN(4) {
		case 0:
			return "CREATE UNIQUE INDEX ui ON " + t + " (" + g.existing(t) + ")" + g.pick([]string{"", " USING HASH"})
		case 1:
			return "DROP INDEX " + g.pick([]string{"ui", "uk", "uk2"}) + " ON " + t
		}
		return "CREATE TABLE " + g.table() + " LIKE " + t
	}
	var specs []string
	charsets := 0 // CONVERT TO beside another charset option leaves the table unknown: rarely
	for range 1 + g.r.IntN(3) {
		choice := g.r.IntN(14)
		if (choice == 7 || choice == 8) && charsets > 0 && g.r.IntN(8) > 0 {
			choice = 0
		}
		if choice == 7 || choice == 8 {
			charsets++
		}
		ifNot := g.pick([]string{"", "", "", "IF NOT EXISTS "}) // MariaDB's, as migration scripts write them
		ifExists := strings.Replace(ifNot, "NOT ", "", 1)
		switch choice {
		case 0, 1:
			if g.r.IntN(6) == 0 {
				specs = append(specs, "ADD COLUMN "+ifNot+"("+g.name()+" "+g.colType()+", "+g.name()+" "+g.colType()+")")
				continue
			}
			specs = append(specs, "ADD COLUMN "+ifNot+g.name()+" "+g.colType()+g.position(t))
		case 2:
			specs = append(specs, "DROP COLUMN "+ifExists+g.pick([]string{g.existing(t), g.name()}))
		case 3, 4:
			specs = append(specs, "CHANGE "+ifExists+g.existing(t)+" "+g.name()+" "+g.colType()+g.position(t))
		case 5:
			specs = append(specs, "MODIFY "+ifExists+g.existing(t)+" "+g.colType()+g.position(t))
		case 6:
			specs = append(specs, "RENAME COLUMN "+g.existing(t)+" TO "+g.name())
		case 7:
			specs = append(specs, g.pick([]string{"CHARACTER SET latin1", "CHARACTER SET utf8mb4", "COLLATE utf8mb4_bin", "DEFAULT CHARSET cp1251"}))
		case 8:
			specs = append(specs, "CONVERT TO CHARACTER SET "+g.pick([]string{"latin1", "utf8mb4", "utf8mb3", "cp1251", "latin1 COLLATE latin1_general_ci"}))
		case 9:
			specs = append(specs, "ADD PRIMARY KEY ("+g.existing(t)+")")
		case 10:
			specs = append(specs, "DROP PRIMARY KEY")
		case 11:
			specs = append(specs, "ALTER COLUMN "+g.existing(t)+" SET DEFAULT 1")
		case 12:
			specs = append(specs, g.pick([]string{"ADD SYSTEM VERSIONING", "DROP SYSTEM VERSIONING", "ENGINE=InnoDB", "FORCE",
				"ENGINE=Aria", "ENGINE=MyISAM", "PARTITION BY KEY() PARTITIONS 2", "REMOVE PARTITIONING"}))
		default:
			switch g.r.IntN(4) {
			case 0:
				specs = append(specs, "ADD INDEX ("+g.existing(t)+")")
			case 1:
				specs = append(specs, "ADD "+g.unique(g.tables[t]))
			case 2:
				specs = append(specs, "DROP INDEX "+g.pick(append([]string{"uk", "uk2", "ui"}, g.tables[t]...)))
			default:
				specs = append(specs, "RENAME INDEX uk TO uk2")
			}
		}
	}
	return "ALTER TABLE " + t + " " + strings.Join(specs, ", ")
}
