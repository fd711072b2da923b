package binlogstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/binlogstream/binlogstream/internal/sqlconn"
	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
)

var _ SchemaSnapshotter = (*SyncerSource)(nil)

// snapshotAttempts bounds the reads of a snapshot while DDL keeps coming
// under it.
const snapshotAttempts = 20

// SchemaSnapshot reads the tables of databases (every database but the
// server's own when empty) from information_schema, and the binlog
// position they are exact at. It reads the binlog position (and GTID set)
// before and after the definitions and retries until the binlog between
// the two holds no DDL (SHOW BINLOG EVENTS; on a busy server the position
// moves, with row changes): a DDL statement holds an exclusive metadata
// lock on its table until it is in the binlog, and information_schema
// waits for that lock, so a definition read while no DDL reached the
// binlog is the one at the position before the read. The
// account needs SELECT on the tables (or their columns) and BINLOG
// MONITOR (REPLICATION CLIENT on MySQL).
func (s *SyncerSource) SchemaSnapshot(ctx context.Context, databases []string) (*SchemaSnapshot, error) {
	conn, done, err := s.queryConn(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	for range snapshotAttempts {
		before, err := s.binlogPoint(conn)
		if err != nil {
			return nil, err
		}
		snap, err := readSchema(conn, databases)
		if err != nil {
			return nil, err
		}
		after, err := s.binlogPoint(conn)
		if err != nil {
			return nil, err
		}
		place := before == after
		if !place {
			// A busy server's binlog always moves; what matters is that no
			// DDL is in between: then no definition changed from before to
			// after, and the read is the one at before.
			ddl, err := ddlBetween(conn, before.pos, after.pos)
			if err != nil {
				return nil, err
			}
			place = !ddl
		}
		if place {
			snap.Position, snap.Executed = before.pos, before.executed
			if snap.Executed != "" {
				snap.Flavor = s.flavor()
			}
			return snap, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, fmt.Errorf("DDL reached the binlog during each of %d schema reads: no read can be placed at one position", snapshotAttempts)
}

// windowEvents bounds the events ddlBetween reads: a longer window is
// taken as holding DDL (the read is retried).
const windowEvents = 200_000

// ddlBetween reports whether the binlog from one position to another
// (SHOW BINLOG EVENTS) holds a statement other than BEGIN, COMMIT and
// ROLLBACK: DDL, or anything that might change a definition. Row events,
// GTIDs and XIDs do not.
func ddlBetween(conn *client.Conn, from, to Position) (bool, error) {
	seen, ddl := 0, false
	err := eachBinlogEvent(conn, from, to, listPage, func(e *listedEvent) bool {
		if seen++; seen > windowEvents || string(e.typ) == "Query" && !isTxnControl(string(e.info)) {
			ddl = true
		}
		return !ddl
	})
	return ddl, err
}

// listPage is how many events one SHOW BINLOG EVENTS returns.
const listPage = 10_000

// listedEvent is a SHOW BINLOG EVENTS row: the event's file, position,
// end (End_log_pos), type and text (Info). typ and info are go-mysql's
// row buffer, reused for the next row: valid during the call that gets
// them only.
type listedEvent struct {
	file      string
	pos, end  uint64
	typ, info []byte
}

// eachBinlogEvent calls each with the SHOW BINLOG EVENTS row of every
// event from one position up to the one at or after another, a page at a
// time, until each returns false. Rows are read as they come
// (go-mysql's streaming read: no result set is built), so the client's
// work on a page overlaps the server's listing of it; the rest of a page
// after a stop is read and dropped, leaving the connection usable.
func eachBinlogEvent(conn *client.Conn, from, to Position, page int, each func(e *listedEvent) bool) error {
	files := []string{from.File}
	if from.File != to.File {
		logs, err := queryStrings(conn, "SHOW BINARY LOGS")
		if err != nil {
			return err
		}
		files = files[:0]
		for _, l := range logs {
			if l[0] >= from.File && l[0] <= to.File {
				files = append(files, l[0])
			}
		}
		if len(files) == 0 || files[0] != from.File || files[len(files)-1] != to.File {
			return fmt.Errorf("SHOW BINARY LOGS lists %v, not both %s and %s", files, from.File, to.File)
		}
	}
	for i, f := range files {
		pos := uint64(4)
		if i == 0 {
			pos = from.Offset
		}
		for {
			q := fmt.Sprintf("SHOW BINLOG EVENTS IN %s FROM %d LIMIT %d", sqlList([]string{f}), pos, page)
			var (
				rows      int
				stop      bool
				rowErr    error
				next      uint64
				ev        = listedEvent{file: f}
				result    mysql.Result
				badColumn = func(name string, v string) error {
					return fmt.Errorf("SHOW BINLOG EVENTS IN %s FROM %d: %s %q", f, pos, name, v)
				}
			)
			err := conn.ExecuteSelectStreaming(q, &result, func(row []mysql.FieldValue) error {
				if rows++; stop || rowErr != nil {
					return nil // the rest of the page: read, not used
				}
				if len(row) < 6 {
					rowErr = fmt.Errorf("SHOW BINLOG EVENTS IN %s: %d columns, want 6", f, len(row))
					return nil
				}
				at, ok := fieldUint(&row[1])
				if !ok {
					rowErr = badColumn("position", row[1].String())
					return nil
				}
				if f == to.File && at >= to.Offset {
					stop = true
					return nil
				}
				end, ok := fieldUint(&row[4])
				if !ok {
					rowErr = badColumn("end position", row[4].String())
					return nil
				}
				ev.pos, ev.end, ev.typ, ev.info = at, end, fieldText(&row[2]), fieldText(&row[5])
				stop = !each(&ev)
				next = end
				return nil
			}, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			if rowErr != nil || stop {
				return rowErr
			}
			if rows < page {
				break
			}
			if next <= pos {
				return fmt.Errorf("SHOW BINLOG EVENTS IN %s: the page from %d ends at %d", f, pos, next)
			}
			pos = next
		}
	}
	return nil
}

// fieldUint reads a non-negative integer column: go-mysql gives one of
// an integer type as a number, others as text.
func fieldUint(v *mysql.FieldValue) (uint64, bool) {
	switch v.Type {
	case mysql.FieldValueTypeUnsigned:
		return v.AsUint64(), true
	case mysql.FieldValueTypeSigned:
		return v.AsUint64(), v.AsInt64() >= 0
	case mysql.FieldValueTypeString:
		return parseDecimal(v.AsString())
	}
	return 0, false
}

// fieldText is a text column's bytes; nil for NULL (whose FieldValue
// keeps the bytes of an earlier row).
func fieldText(v *mysql.FieldValue) []byte {
	if v.Type != mysql.FieldValueTypeString {
		return nil
	}
	return v.AsString()
}

// parseDecimal reads an unsigned decimal number of up to 19 digits.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// listStatements lists the Query events of the binlog from `from` to a
// position (SHOW BINLOG EVENTS: the server reads its files and sends no
// rows), leaving out what a dump from `from` leaves out. In GTID mode
// the list starts at the newest file whose GTID state at its start (its
// Gtid_list) from's set holds, and skips the transactions the set holds;
// GTIDs out of order in a domain (gtid_strict_mode off), where a dump's
// start would be another, are an error. MariaDB only: its list gives a
// statement's default database as parseQueryInfo reads it.
func (s *SyncerSource) listStatements(ctx context.Context, from ResumePosition, to Position, each func(info string) error) error {
	conn, done, err := s.queryConn(ctx)
	if err != nil {
		return err
	}
	defer done()
	if f := s.flavor(); f != mysql.MariaDBFlavor {
		return fmt.Errorf("statements are listed on MariaDB only, not %s", f)
	}
	// Default databases quoted with backquotes, and the text as the
	// binlog holds it (not converted to another character set).
	for _, q := range []string{"SET SESSION sql_quote_show_create = 1, SESSION sql_mode = ''", "SET SESSION character_set_results = binary"} {
		if _, err := conn.Execute(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	start := from.Safe
	var held, last map[uint32]uint64 // GTID mode: from's sequence number and the last one listed, by domain
	if from.IsGTID() {
		if held, err = gtidSeqs(from.Executed); err != nil {
			return err
		}
		if start, err = gtidListStart(conn, held, to); err != nil {
			return err
		}
		last = map[uint32]uint64{}
	}
	skip := false // the transaction listed is one from holds
	var eachErr error
	err = eachBinlogEvent(conn, start, to, cmp.Or(s.listPage, listPage), func(e *listedEvent) bool {
		switch {
		case string(e.typ) == "Gtid" && held != nil:
			var g gtidSeq
			if g, eachErr = parseGTIDInfo(string(e.info)); eachErr != nil {
				return false
			}
			if prev, ok := last[g.domain]; ok && g.seq <= prev {
				eachErr = fmt.Errorf("GTID %s at %s:%d comes after sequence number %d of its domain", e.info, e.file, e.pos, prev)
				return false
			}
			last[g.domain] = g.seq
			have, ok := held[g.domain]
			skip = ok && g.seq <= have
		case string(e.typ) == "Query" && !skip:
			eachErr = each(string(e.info))
		}
		return eachErr == nil
	})
	return cmp.Or(eachErr, err)
}

// gtidSeq is a MariaDB GTID without its server ID (which containment
// ignores).
type gtidSeq struct {
	domain uint32
	seq    uint64
}

// gtidSeqs is a MariaDB GTID set as each domain's sequence number.
func gtidSeqs(set string) (map[uint32]uint64, error) {
	out := map[uint32]uint64{}
	for _, t := range strings.Split(set, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		g, err := parseGTID(t)
		if err != nil {
			return nil, err
		}
		out[g.domain] = max(out[g.domain], g.seq)
	}
	return out, nil
}

func parseGTID(t string) (gtidSeq, error) {
	parts := strings.Split(t, "-")
	if len(parts) != 3 {
		return gtidSeq{}, fmt.Errorf("GTID %q: want DOMAIN-SERVER-SEQUENCE", t)
	}
	d, err1 := strconv.ParseUint(parts[0], 10, 32)
	_, err2 := strconv.ParseUint(parts[1], 10, 32)
	n, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err := cmp.Or(err1, err2, err3); err != nil {
		return gtidSeq{}, fmt.Errorf("GTID %q: %w", t, err)
	}
	return gtidSeq{uint32(d), n}, nil
}

// parseGTIDInfo reads the GTID of a Gtid event's text as SHOW BINLOG
// EVENTS lists it: "GTID 0-1-4", "BEGIN GTID 0-1-5", "... GTID 0-1-6
// cid=9" (XA: "XA START xid GTID 0-1-7").
func parseGTIDInfo(info string) (gtidSeq, error) {
	i := strings.LastIndex(info, "GTID ")
	if i < 0 {
		return gtidSeq{}, fmt.Errorf("Gtid event %q: no GTID", info)
	}
	t, _, _ := strings.Cut(info[i+len("GTID "):], " ")
	return parseGTID(t)
}

// gtidListStart returns the start of the newest binlog file up to to's
// whose Gtid_list (the last GTID of each domain before it) held has.
func gtidListStart(conn *client.Conn, held map[uint32]uint64, to Position) (Position, error) {
	logs, err := queryStrings(conn, "SHOW BINARY LOGS")
	if err != nil {
		return Position{}, err
	}
	for i := len(logs) - 1; i >= 0; i-- {
		f := logs[i][0]
		if f > to.File {
			continue
		}
		rows, err := queryStrings(conn, fmt.Sprintf("SHOW BINLOG EVENTS IN %s LIMIT 4", sqlList([]string{f})))
		if err != nil {
			return Position{}, err
		}
		list := ""
		for _, r := range rows {
			if r[2] == "Gtid_list" {
				list = r[5]
				break
			}
		}
		if !strings.HasPrefix(list, "[") || !strings.HasSuffix(list, "]") {
			return Position{}, fmt.Errorf("%s: no Gtid_list event in its first events", f)
		}
		before, err := gtidSeqs(list[1 : len(list)-1])
		if err != nil {
			return Position{}, fmt.Errorf("%s's Gtid_list: %w", f, err)
		}
		holds := true
		for d, n := range before {
			if have, ok := held[d]; !ok || have < n {
				holds = false
			}
		}
		if holds {
			return Position{File: f, Offset: 4}, nil
		}
	}
	return Position{}, errors.New("no binlog file starts at or before the GTID set")
}

// isTxnControl: a Query event's text (after MariaDB's "use `db`; ") is
// BEGIN, COMMIT or ROLLBACK.
func isTxnControl(info string) bool {
	if strings.HasPrefix(info, "use `") {
		if i := strings.Index(info, "`; "); i > 0 {
			info = info[i+3:]
		}
	}
	switch strings.ToUpper(strings.TrimSpace(info)) {
	case "BEGIN", "COMMIT", "ROLLBACK":
		return true
	}
	return false
}

// queryConn opens a query connection to the source's server, closed when
// ctx ends or done is called.
func (s *SyncerSource) queryConn(ctx context.Context) (*client.Conn, func(), error) {
	conn, err := connectQuery(ctx, s.cfg.DSN, s.cfg.TLSConfig, s.cfg.tlsPreferred)
	if err != nil {
		return nil, nil, err
	}
	s.noteFlavor(conn)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	// Once ctx's close has started, it is the only one: two Close calls
	// at once race inside go-mysql.
	return conn, func() {
		if stop() {
			_ = sqlconn.Close(conn)
		}
	}, nil
}

type binlogPoint struct {
	pos      Position
	executed string
}

func (s *SyncerSource) binlogPoint(conn *client.Conn) (binlogPoint, error) {
	var p binlogPoint
	r, err := conn.Execute("SHOW MASTER STATUS")
	if err != nil {
		r, err = conn.Execute("SHOW BINARY LOG STATUS") // MySQL 8.4
	}
	if err != nil {
		return p, fmt.Errorf("read the binlog position: %w", err)
	}
	if r.RowNumber() == 0 {
		return p, errors.New("the server reports no binlog position (log_bin=OFF?)")
	}
	file, _ := r.GetString(0, 0)
	pos, _ := r.GetUint(0, 1)
	p.pos = Position{File: strings.Clone(file), Offset: pos}
	v := "@@GLOBAL.gtid_executed"
	if s.flavor() == mysql.MariaDBFlavor {
		v = "@@GLOBAL.gtid_binlog_pos"
	}
	if r, err = conn.Execute("SELECT " + v); err == nil {
		x, _ := r.GetString(0, 0)
		p.executed = strings.ReplaceAll(strings.Clone(x), "\n", "")
	}
	return p, nil
}

var systemDatabases = []string{"mysql", "information_schema", "performance_schema", "sys"}

// readSchema reads the definitions; the caller places them in the binlog.
func readSchema(conn *client.Conn, databases []string) (*SchemaSnapshot, error) {
	where := "SCHEMA_NAME NOT IN (" + sqlList(systemDatabases) + ")"
	if len(databases) > 0 {
		where = "SCHEMA_NAME IN (" + sqlList(databases) + ")"
	}
	tableWhere := strings.ReplaceAll(where, "SCHEMA_NAME", "TABLE_SCHEMA")
	snap := &SchemaSnapshot{Databases: map[string]string{}}
	rows, err := queryStrings(conn, "SELECT @@character_set_server")
	if err != nil {
		return nil, err
	}
	snap.ServerCharset = rows[0][0]
	if rows, err = queryStrings(conn, "SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE "+where); err != nil {
		return nil, err
	}
	for _, r := range rows {
		snap.Databases[r[0]] = r[1]
	}
	if rows, err = queryStrings(conn, "SELECT TABLE_SCHEMA, TABLE_NAME, IFNULL(TABLE_COLLATION,''), TABLE_TYPE, IFNULL(ENGINE,''), IFNULL(CREATE_OPTIONS,'') FROM information_schema.TABLES "+
		"WHERE TABLE_TYPE IN ('BASE TABLE','SYSTEM VERSIONED','SEQUENCE') AND "+tableWhere+" ORDER BY TABLE_SCHEMA, TABLE_NAME"); err != nil {
		return nil, err
	}
	index := map[ddl.Key]int{}
	for _, r := range rows {
		t := SnapshotTable{Schema: r[0], Name: r[1], Engine: r[4], Partitioned: strings.Contains(r[5], "partitioned")}
		if coll := r[2]; coll != "" {
			t.Charset = schema.CharsetOfOption(false, true, coll, "")
		}
		if r[3] == "SYSTEM VERSIONED" {
			// Its row start and end columns are in COLUMNS when declared,
			// and implicit (left out) unless SHOW CREATE TABLE declares
			// the period.
			if t.SystemVersioned, err = implicitVersioning(conn, t.Schema, t.Name); err != nil {
				return nil, err
			}
		}
		index[ddl.Key{Schema: t.Schema, Name: t.Name}] = len(snap.Tables)
		snap.Tables = append(snap.Tables, t)
	}
	if rows, err = queryStrings(conn, "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, LOWER(DATA_TYPE), LOWER(COLUMN_TYPE), "+
		"IFNULL(CHARACTER_MAXIMUM_LENGTH,''), IFNULL(NUMERIC_PRECISION,''), IFNULL(NUMERIC_SCALE,''), IFNULL(DATETIME_PRECISION,''), "+
		"IFNULL(CHARACTER_SET_NAME,''), IFNULL(COLLATION_NAME,''), IS_NULLABLE, UPPER(EXTRA) "+
		"FROM information_schema.COLUMNS WHERE "+tableWhere+" ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"); err != nil {
		return nil, err
	}
	for _, r := range rows {
		i, ok := index[ddl.Key{Schema: r[0], Name: r[1]}]
		if !ok {
			continue // a view
		}
		snap.Tables[i].Columns = append(snap.Tables[i].Columns, columnFromInfoSchema(r[2:]))
	}
	// The primary key and the UNIQUE keys, in one query: a long unique
	// key (MariaDB) is INDEX_TYPE HASH outside the MEMORY engine, whose
	// hash keys have no hidden column.
	if rows, err = queryStrings(conn, "SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COLUMN_NAME, IFNULL(SUB_PART,0), INDEX_TYPE FROM information_schema.STATISTICS "+
		"WHERE NON_UNIQUE = 0 AND "+tableWhere+" ORDER BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX"); err != nil {
		return nil, err
	}
	for _, r := range rows {
		i, ok := index[ddl.Key{Schema: r[0], Name: r[1]}]
		if !ok {
			continue
		}
		t := &snap.Tables[i]
		if r[2] == "PRIMARY" {
			t.PrimaryKey = append(t.PrimaryKey, r[3])
			continue
		}
		if n := len(t.UniqueKeys); n == 0 || t.UniqueKeys[n-1].Name != r[2] {
			engine := strings.ToLower(t.Engine)
			t.UniqueKeys = append(t.UniqueKeys, SnapshotKey{Name: r[2], Hash: r[5] == "HASH" && engine != "memory" && engine != "heap"})
		}
		k := &t.UniqueKeys[len(t.UniqueKeys)-1]
		sub, _ := strconv.Atoi(r[4])
		k.Columns, k.SubParts = append(k.Columns, r[3]), append(k.SubParts, sub)
	}
	return snap, nil
}

// implicitVersioning reports whether a system-versioned table's row start
// and end columns are implicit: its SHOW CREATE TABLE declares no PERIOD
// FOR SYSTEM_TIME.
func implicitVersioning(conn *client.Conn, schema, table string) (bool, error) {
	rows, err := queryStrings(conn, "SHOW CREATE TABLE "+quoteName(schema, table))
	if err != nil {
		return false, err
	}
	if len(rows) == 0 || len(rows[0]) < 2 {
		return false, fmt.Errorf("SHOW CREATE TABLE %s: no definition", quoteName(schema, table))
	}
	return !strings.Contains(strings.ToUpper(rows[0][1]), "PERIOD FOR SYSTEM_TIME"), nil
}

// columnFromInfoSchema reads COLUMN_NAME, DATA_TYPE, COLUMN_TYPE,
// CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE,
// DATETIME_PRECISION, CHARACTER_SET_NAME, COLLATION_NAME, IS_NULLABLE,
// EXTRA.
func columnFromInfoSchema(r []string) Column {
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	c := Column{Name: r[0], DataType: r[1], Unsigned: strings.Contains(r[2], " unsigned"),
		Charset: charset.Normalize(r[7]), Collation: charset.NormalizeCollation(r[8]), Nullable: r[9] == "YES"}
	switch c.DataType {
	case "char", "varchar", "binary", "varbinary":
		c.Length = num(r[3])
	case "bit":
		c.Length = num(r[4])
	case "decimal", "numeric":
		c.DataType, c.Precision, c.Scale = "decimal", num(r[4]), num(r[5])
	case "time", "datetime", "timestamp":
		c.FSP = num(r[6])
	case "enum", "set":
		c.Elems = parseEnumMembers(r[2])
	}
	if schema.IsTextType(c.DataType) && c.Charset == "" {
		c.Charset, c.Collation = "binary", "binary"
	}
	extra := r[10]
	c.Generated = strings.Contains(extra, "GENERATED") || strings.Contains(extra, "VIRTUAL") ||
		strings.Contains(extra, "PERSISTENT") || strings.Contains(extra, "STORED")
	c.Type = schema.FormatType(&c)
	return c
}

// parseEnumMembers reads the members of "enum('a','b”c')".
func parseEnumMembers(colType string) []string {
	open := strings.IndexByte(colType, '(')
	if open < 0 {
		return nil
	}
	s := colType[open+1:]
	var out []string
	for {
		if len(s) == 0 || s[0] != '\'' {
			return out
		}
		s = s[1:]
		var b strings.Builder
		for len(s) > 0 {
			if s[0] == '\'' {
				if len(s) > 1 && s[1] == '\'' {
					b.WriteByte('\'')
					s = s[2:]
					continue
				}
				s = s[1:]
				break
			}
			if s[0] == '\\' && len(s) > 1 {
				b.WriteByte(s[1])
				s = s[2:]
				continue
			}
			b.WriteByte(s[0])
			s = s[1:]
		}
		out = append(out, b.String())
		if len(s) == 0 || s[0] != ',' {
			return out
		}
		s = s[1:]
	}
}

func sqlList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + strings.ReplaceAll(strings.ReplaceAll(n, `\`, `\\`), "'", "''") + "'"
	}
	return strings.Join(q, ",")
}

// queryStrings runs a query and returns every value as a string (NULL
// as "").
func queryStrings(conn *client.Conn, q string) ([][]string, error) {
	r, err := conn.Execute(q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", firstWords(q), err)
	}
	out := make([][]string, r.RowNumber())
	for i := range out {
		out[i] = make([]string, r.ColumnNumber())
		for j := range out[i] {
			v, err := r.GetString(i, j)
			if err != nil {
				return nil, err
			}
			out[i][j] = strings.Clone(v)
		}
	}
	return out, nil
}

func firstWords(q string) string {
	if i := strings.Index(q, " WHERE"); i > 0 {
		return q[:i]
	}
	return q
}
