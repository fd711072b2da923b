package binlogstream

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/binlogstream/binlogstream/internal/charset"
	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/queryevent"
	"github.com/binlogstream/binlogstream/internal/redact"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// SchemaSnapshot is the definition of the streamed databases' tables at
// one binlog position, read from information_schema by a source that
// proved no DDL was logged while it read (see SyncerSource.SchemaSnapshot).
type SchemaSnapshot struct {
	// Position is the binlog position the snapshot is exact at (the end of
	// the binlog while it was read).
	Position Position `json:"position"`
	// Flavor and Executed: the server's GTID set at that position.
	Flavor   string `json:"flavor,omitempty"`
	Executed string `json:"executed,omitempty"`
	// ServerCharset is character_set_server, the default of a CREATE
	// DATABASE without one.
	ServerCharset string `json:"server_charset,omitempty"`
	// Databases maps each database read to its default charset.
	Databases map[string]string `json:"databases"`
	Tables    []SnapshotTable   `json:"tables"`
}

// SnapshotTable is one table of a SchemaSnapshot.
type SnapshotTable struct {
	Schema     string   `json:"schema"`
	Name       string   `json:"name"`
	Charset    string   `json:"charset,omitempty"`
	Columns    []Column `json:"columns"`
	PrimaryKey []string `json:"primary_key,omitempty"`
	// SystemVersioned: MariaDB system versioning with implicit row_start
	// and row_end columns, which information_schema.COLUMNS leaves out
	// and every row image ends with.
	SystemVersioned bool `json:"system_versioned,omitempty"`
	// Engine is the table's storage engine; UniqueKeys its UNIQUE keys
	// but the primary key, whose hash keys (MariaDB's long unique keys)
	// each have a hidden column at the end of every row image.
	Engine     string        `json:"engine,omitempty"`
	UniqueKeys []SnapshotKey `json:"unique_keys,omitempty"`
	// Partitioned: the table is partitioned (PARTITION BY), on which it
	// depends whether a long unique key stays one through ALTER TABLE.
	Partitioned bool `json:"partitioned,omitempty"`
}

// SnapshotKey is a UNIQUE key of a snapshot table.
type SnapshotKey struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	// SubParts are the prefix lengths of the columns (0: whole column).
	SubParts []int `json:"sub_parts,omitempty"`
	Hash     bool  `json:"hash,omitempty"`
}

// SchemaRecord is one entry of a persisted schema history: a snapshot,
// or a DDL statement at its binlog position.
type SchemaRecord struct {
	Snapshot *SchemaSnapshot `json:"snapshot,omitempty"`
	Prescan  *SchemaPrescan  `json:"prescan,omitempty"`

	// A DDL statement: its transaction's GTID (GTID mode), the end of its
	// event, its default database and text.
	GTID      string   `json:"gtid,omitempty"`
	End       Position `json:"end,omitzero"`
	Database  string   `json:"db,omitempty"`
	Statement string   `json:"sql,omitempty"`
	// ServerCharset is the statement's collation_server's charset (from
	// the Query event), the default of a CREATE DATABASE without one.
	ServerCharset string `json:"server_charset,omitempty"`
	// SQLMode is the statement's sql_mode (from the Query event), the
	// flags of it that change how a statement reads: ANSI_QUOTES,
	// NO_BACKSLASH_ESCAPES, REAL_AS_FLOAT, PIPES_AS_CONCAT, IGNORE_SPACE,
	// HIGH_NOT_PRECEDENCE.
	SQLMode uint64 `json:"sql_mode,omitempty"`
	// ErrorCode is the error the statement failed with on the server,
	// which the binlog logs it with when it changed something (a failed
	// CREATE OR REPLACE TABLE has dropped the table); 0 when it succeeded.
	ErrorCode uint16 `json:"error_code,omitempty"`
}

func (r *SchemaRecord) isDDL() bool { return r.Snapshot == nil && r.Prescan == nil }

// key identifies a DDL record: its GTID where it has one (the same on
// every server of a topology), else its end position.
func (r *SchemaRecord) key() string {
	if r.GTID != "" {
		return "gtid:" + r.GTID
	}
	return "pos:" + r.End.String()
}

// histTableOf is a snapshot table as the history holds it.
func histTableOf(st SnapshotTable) *schema.Table {
	t := schema.FromSnapshot(st.Columns, st.PrimaryKey, st.Charset, st.SystemVersioned, st.Engine, st.Partitioned)
	for _, k := range st.UniqueKeys {
		t.AddUniqueKey(k.Name, k.Columns, k.SubParts, k.Hash)
	}
	return t
}

// queryText is a Query event's statement in UTF-8, decoded from the
// client charset it was sent in (queryevent.StatementText).
func queryText(e *replication.QueryEvent, flavor string) string {
	if id := queryevent.ClientCollation(e.StatusVars); id != 0 {
		cs, _ := charset.Names(flavor, id)
		return queryevent.StatementText(e.Query, charset.Normalize(cs))
	}
	return string(e.Query)
}

// applyRecord applies a DDL record to h with the server charset, sql_mode
// and error code it ran under. A statement that contradicts the history
// is an ErrSchemaHistory.
func applyRecord(h *schema.History, rec *SchemaRecord) (schema.Change, error) {
	if rec.ServerCharset != "" {
		h.ServerCharset = rec.ServerCharset
	}
	ch, err := h.ApplyLogged(rec.Database, rec.Statement, rec.SQLMode, rec.ErrorCode)
	return ch, historyError(err)
}

// historyError is a *schema.Contradiction as an ErrSchemaHistory; nil
// stays nil.
func historyError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrSchemaHistory, err)
}

// install replaces what the history knows of the snapshot's databases by
// the snapshot: it is the truth at its position.
func install(h *schema.History, s *SchemaSnapshot) {
	if s.ServerCharset != "" {
		h.ServerCharset = s.ServerCharset
	}
	for db, cs := range s.Databases {
		h.DropDatabase(db)
		h.DBs[db] = cs
	}
	for _, st := range s.Tables {
		h.Tables[ddl.Key{Schema: st.Schema, Name: st.Name}] = histTableOf(st)
	}
}

// before reports whether the binlog point a (an end position, a GTID
// set, or a GTID) lies at or before the resume position r, in r's mode.
func snapshotAtOrBefore(s *SchemaSnapshot, r ResumePosition) (bool, error) {
	if r.IsGTID() {
		if s.Executed == "" || s.Flavor != r.Flavor {
			return false, nil
		}
		have, err := mysql.ParseGTIDSet(r.Flavor, r.Executed)
		if err != nil {
			return false, err
		}
		snap, err := mysql.ParseGTIDSet(s.Flavor, s.Executed)
		if err != nil {
			return false, fmt.Errorf("%w: snapshot GTID set %q: %v", ErrSchemaHistory, s.Executed, err)
		}
		return have.Contain(snap), nil
	}
	return s.Position.Compare(r.Streamed) <= 0, nil
}

func ddlAtOrBefore(rec *SchemaRecord, r ResumePosition, executed mysql.GTIDSet) bool {
	if r.IsGTID() {
		if rec.GTID == "" || executed == nil {
			return false
		}
		g, err := mysql.ParseGTIDSet(r.Flavor, rec.GTID)
		return err == nil && executed.Contain(g)
	}
	return !rec.End.IsZero() && rec.End.Compare(r.Streamed) <= 0
}

// historyAt rebuilds the schema history as of resume position r from
// the persisted records: the newest snapshot at or before r, then the
// DDL records after it up to r, in binlog order. A snapshot after r
// stays pending: the stream installs it when it gets there.
func historyAt(recs []SchemaRecord, r ResumePosition) (*schema.History, map[string]bool, *SchemaSnapshot, error) {
	h := schema.NewHistory()
	applied := map[string]bool{}
	var base, pending *SchemaSnapshot
	for i := range recs {
		s := recs[i].Snapshot
		if s == nil {
			continue
		}
		ok, err := snapshotAtOrBefore(s, r)
		if err != nil {
			return nil, nil, nil, err
		}
		if ok {
			base = s
		} else if pending == nil {
			pending = s
		}
	}
	var executed mysql.GTIDSet
	if r.IsGTID() {
		var err error
		if executed, err = mysql.ParseGTIDSet(r.Flavor, r.Executed); err != nil {
			return nil, nil, nil, err
		}
	}
	if base != nil {
		install(h, base)
		pending = nil
	} else if pending != nil {
		if p := findPrescan(recs, pending, r); p != nil {
			installUntouched(h, pending, p)
		}
	}
	for i := range recs {
		rec := &recs[i]
		if !rec.isDDL() || !ddlAtOrBefore(rec, r, executed) {
			continue
		}
		applied[rec.key()] = true
		if base != nil && inSnapshot(rec, base, r.IsGTID()) {
			continue // the snapshot already holds it
		}
		if _, err := applyRecord(h, rec); err != nil {
			return nil, nil, nil, err
		}
	}
	return h, applied, pending, nil
}

// inSnapshot reports whether a DDL record lies at or before a snapshot.
func inSnapshot(rec *SchemaRecord, s *SchemaSnapshot, gtidMode bool) bool {
	if !gtidMode {
		return rec.End.Compare(s.Position) <= 0
	}
	snap, err := mysql.ParseGTIDSet(s.Flavor, s.Executed)
	return err == nil && ddlAtOrBefore(rec, ResumePosition{Flavor: s.Flavor, Executed: s.Executed}, snap)
}

// schemaTracker follows the schema along one stream: it applies each DDL
// statement to the history once, installs a snapshot when the stream
// reaches its position, and resolves every Table_map to the *Table of
// the rows that follow it, checked against the history. No I/O: the
// streamer persists the records it returns.
type schemaTracker struct {
	flavor  string
	hist    *schema.History
	applied map[string]bool
	pending *SchemaSnapshot

	crc   int         // checksum bytes after each event's body (from the Format_description)
	last  *tableEntry // the last rows event's, the common case for the next one
	byID  map[uint64]*tableEntry
	idOf  map[ddl.Key]uint64
	noLog string // why a table without history is unknown
	// ddl is what the last event observed changed, when it was a DDL
	// statement (Event.DDL).
	ddl []TableChange
}

type tableEntry struct {
	version uint64 // the history's version when hist was last looked up
	body    []byte // the Table_map's body, without header and checksum
	key     ddl.Key
	tm      *replication.TableMapEvent
	hist    *schema.Table
	table   *Table
}

func newSchemaTracker(flavor string, h *schema.History, applied map[string]bool, pending *SchemaSnapshot) *schemaTracker {
	if applied == nil {
		applied = map[string]bool{}
	}
	return &schemaTracker{flavor: flavor, hist: h, applied: applied, pending: pending, crc: -1,
		byID: map[uint64]*tableEntry{}, idOf: map[ddl.Key]uint64{}}
}

// observe follows one event (delivered or dropped as replayed) at the
// place d gives. It returns the Table for Table_map and rows events, and
// a record to persist, before the event is acknowledged, for a DDL
// statement not yet in the history.
func (st *schemaTracker) observe(be *replication.BinlogEvent, d *decision) (*Table, *SchemaRecord, error) {
	st.ddl = nil
	if st.pending != nil {
		if err := st.maybeInstall(be, d); err != nil {
			return nil, nil, err
		}
	}
	switch e := be.Event.(type) {
	case *replication.RowsEvent:
		if st.last != nil && st.last.tm.TableID == e.TableID {
			return st.last.table, nil, nil
		}
		if ent := st.byID[e.TableID]; ent != nil {
			st.last = ent
			return ent.table, nil, nil
		}
		return nil, nil, nil
	case *replication.TableMapEvent:
		t, err := st.resolve(e, be.RawData, d)
		return t, nil, err
	case *replication.QueryEvent:
		if !ddl.IsDDL(e.Query) {
			return nil, nil, nil
		}
		// The history keeps the statement with its secrets masked (an
		// account or server statement's password, a FEDERATED table's
		// CONNECTION credentials): every store it is written to is then
		// free of them, and the history reads it the same, a masked
		// literal being a literal still.
		rec := &SchemaRecord{GTID: d.gtid, End: d.end, Database: string(e.Schema), ErrorCode: e.ErrorCode,
			Statement: historyStatement(queryText(e, st.flavor), e.StatusVars)}
		k := rec.key()
		if st.applied[k] {
			st.ddl = st.tableChanges(ddl.Targets(rec.Database, rec.Statement))
			return nil, nil, nil
		}
		st.hist.Version++
		rec.SQLMode = queryevent.SQLMode(e.StatusVars) & uint64(ddl.ParserModes)
		if id := queryevent.ServerCollation(e.StatusVars); id != 0 {
			if cs, _ := charset.Names(st.flavor, id); cs != "" {
				rec.ServerCharset = charset.Normalize(cs)
			}
		}
		ch, err := applyRecord(st.hist, rec)
		if err != nil {
			return nil, nil, fmt.Errorf("%w (at %s)", err, d.start)
		}
		st.applied[k] = true
		st.ddl = st.tableChanges(ch.Touched)
		return nil, rec, nil
	}
	return nil, nil, nil
}

// tableChanges describes the tables keys name as the history has them
// now, each once.
func (st *schemaTracker) tableChanges(keys []ddl.Key) []TableChange {
	out := make([]TableChange, 0, len(keys))
	seen := map[ddl.Key]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		tc := TableChange{Schema: k.Schema, Name: k.Name, Unknown: st.hist.Unknown[k]}
		if h := st.hist.Tables[k]; h != nil {
			t := &Table{Schema: k.Schema, Name: k.Name, Columns: slices.Clone(h.Columns()), Source: SchemaFromHistory}
			for _, name := range h.RowPK() {
				if i := schema.ColumnIndex(t.Columns, name); i >= 0 {
					t.PrimaryKey = append(t.PrimaryKey, i)
					t.Columns[i].Nullable = false // a primary key's columns are NOT NULL
				}
			}
			tc.Table, tc.Charset = t, h.Charset()
		}
		out = append(out, tc)
	}
	return out
}

// keepSecrets, set by tests only, stores statements as the binlog has
// them: the store's unmasked control.
var keepSecrets = false

// historyStatement is a DDL statement as the history stores it: its
// secrets masked, its strings read under the sql_mode it ran with.
func historyStatement(stmt string, statusVars []byte) string {
	if keepSecrets {
		return stmt
	}
	return redact.String(stmt, secretMode(statusVars))
}

// maybeInstall installs the pending snapshot once the stream reaches its
// position: in file mode at the first event that starts at or after it,
// in GTID mode at the first transaction after its executed set.
func (st *schemaTracker) maybeInstall(be *replication.BinlogEvent, d *decision) error {
	s := st.pending
	reached := false
	if s.Executed != "" && d.before.IsGTID() {
		if be.Header.EventType != replication.GTID_EVENT && be.Header.EventType != replication.MARIADB_GTID_EVENT &&
			be.Header.EventType != replication.GTID_TAGGED_LOG_EVENT {
			return nil
		}
		ok, err := snapshotAtOrBefore(s, d.before)
		if err != nil {
			return err
		}
		reached = ok
	} else if !d.before.IsGTID() {
		reached = d.start.Compare(s.Position) >= 0
	}
	if reached {
		st.hist.Version++
		install(st.hist, s)
		st.pending = nil
	}
	return nil
}

func (st *schemaTracker) resolve(tm *replication.TableMapEvent, raw []byte, d *decision) (*Table, error) {
	// The hit path (every statement of one table version) allocates nothing
	// and compares the event's body bytes.
	body := st.tableMapBody(raw)
	ent := st.last // the common case: the table of the last statement
	if ent == nil || ent.tm.TableID != tm.TableID {
		ent = st.byID[tm.TableID]
	}
	if ent != nil && (ent.version == st.hist.Version || st.hist.Tables[ent.key] == ent.hist) &&
		(body != nil && bytes.Equal(ent.body, body) || sameTableMap(ent.tm, tm)) {
		ent.version, st.last = st.hist.Version, ent
		return ent.table, nil
	}
	k := ddl.Key{Schema: string(tm.Schema), Name: string(tm.Table)}
	h := st.hist.Tables[k]
	var t *Table
	switch {
	case hasNames(tm):
		t = &Table{Schema: string(tm.Schema), Name: string(tm.Table), Source: SchemaFromBinlog}
		t.Columns, t.PrimaryKey = schema.FullMapColumns(tm, st.flavor)
		refineFromHistory(t, h)
	case h != nil:
		cols, pk, diff := schema.Merge(h, tm, st.flavor)
		if diff != "" {
			return nil, &SchemaMismatchError{Table: k.String(), Position: d.start, GTID: d.gtid, Diff: diff}
		}
		t = &Table{Schema: k.Schema, Name: k.Name, Columns: cols, PrimaryKey: pk, Source: SchemaFromHistory}
	default:
		t = &Table{Schema: k.Schema, Name: k.Name, Columns: schema.PositionalColumns(tm, st.flavor), Unknown: st.unknownReason(k)}
		for i := range t.Columns {
			schema.TypeFromBinlog(&t.Columns[i], st.flavor)
			if t.Columns[i].Charset == "" && schema.IsTextType(t.Columns[i].DataType) {
				t.Columns[i].DataType, t.Columns[i].Type = "", "" // char or binary: unknown without a charset
			}
		}
		for _, pk := range tm.PrimaryKey {
			t.PrimaryKey = append(t.PrimaryKey, int(pk))
		}
	}
	if old, ok := st.idOf[k]; ok && old != tm.TableID {
		delete(st.byID, old)
	}
	st.last = nil
	st.idOf[k] = tm.TableID
	st.byID[tm.TableID] = &tableEntry{key: k, tm: tm, hist: h, table: t, version: st.hist.Version, body: bytes.Clone(body)}
	return t, nil
}

// refineFromHistory gives a FULL-metadata table the MariaDB types its
// Table_map cannot name (UUID, INET6 and INET4 are logged as binary
// strings), from a history that has the same columns.
func refineFromHistory(t *Table, h *schema.Table) {
	if h == nil {
		return
	}
	cols := h.RowCols()
	if len(cols) != len(t.Columns) {
		return
	}
	for i := range t.Columns {
		if !strings.EqualFold(t.Columns[i].Name, cols[i].Name) {
			return
		}
	}
	for i := range t.Columns {
		c, hc := &t.Columns[i], &cols[i]
		switch hc.DataType {
		case "uuid", "inet6", "inet4":
			if c.DataType == "binary" {
				c.DataType, c.Type, c.Length = hc.DataType, hc.Type, 0
			}
		}
	}
}

// formatDescription notes the dump's checksum length, and the flavor of
// the server that wrote the binlog where the stream's position does not
// say it (file mode): its collation ids are that flavor's.
func (st *schemaTracker) formatDescription(be *replication.BinlogEvent) {
	st.crc = -1
	if fde, ok := be.Event.(*replication.FormatDescriptionEvent); ok {
		st.crc = 0
		if fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
			st.crc = 4
		}
		if strings.Contains(string(fde.ServerVersion), "MariaDB") {
			st.flavor = mysql.MariaDBFlavor
		} else if st.flavor == "" {
			st.flavor = mysql.MySQLFlavor
		}
	}
}

// tableMapBody is a Table_map's body bytes, nil when the checksum length
// is not known.
func (st *schemaTracker) tableMapBody(raw []byte) []byte {
	if st.crc < 0 || len(raw) < replication.EventHeaderSize+st.crc {
		return nil
	}
	return raw[replication.EventHeaderSize : len(raw)-st.crc]
}

func (st *schemaTracker) unknownReason(k ddl.Key) string {
	if why := st.hist.Unknown[k]; why != "" {
		return why
	}
	if st.pending != nil {
		return "the binlog carries no column names (binlog_row_metadata is not FULL) and the schema snapshot is " +
			"newer than this position, with a DDL on the table in between (or the binlog in between not read): " +
			"known from the snapshot's position on, or from a CREATE in the streamed binlog"
	}
	return "the binlog carries no column names (binlog_row_metadata is not FULL) and the schema history has no " +
		"definition of the table (no snapshot covers it and its CREATE was not in the streamed binlog)"
}
