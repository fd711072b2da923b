package binlogbuild

import (
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Builder writes a scripted binlog in one flavor's layout, so a test reads
// like the binlog it models:
//
//	b := NewBuilder(MySQL)
//	b.Txn(func(t *Txn) { t.Insert(users, Row{int32(1), "ann"}) })
//	b.DDL("app", "ALTER TABLE users ADD COLUMN x INT")
//	b.Rotate()
//	bl := b.Build()
//
// MySQL event groups are GTID (or Anonymous_GTID), Query BEGIN,
// [Rows_query], Table_map(s), Rows v2..., Xid. MariaDB groups are GTID (it
// begins the group; no BEGIN), Annotate_rows, Table_map(s), Rows v1..., Xid.
// Each file starts with the magic, the Format_description at offset 4, then
// Previous_gtids (MySQL) or Gtid_list and Binlog_checkpoint (MariaDB).
//
// Builder methods panic on malformed input (a row that does not fit its
// table): that is a bug in the test, not a condition to handle.
type Builder struct {
	cfg    config
	files  []File
	events []EventInfo

	nextGNO   uint64 // next GNO (MySQL) or seq_no (MariaDB)
	xid       uint64
	groups    int   // event groups written so far
	fileSeqNo int64 // MySQL logical clock, restarts in every file
}

type config struct {
	flavor     Flavor
	serverID   uint32
	checksum   bool
	fileBase   string
	maxRows    int
	zeroLogPos bool
	domain     uint32
	uuid       string
	sid        [16]byte
	anonymous  bool
	firstGTID  uint64
	compressed bool
	rowsQuery  bool
	timestamp  uint32
	threadID   uint32
}

// Option configures a Builder.
type Option func(*config)

// ServerID sets the server_id written in every event header (default 1).
func ServerID(id uint32) Option { return func(c *config) { c.serverID = id } }

// Checksum turns CRC32 event checksums on (the default) or off.
func Checksum(on bool) Option { return func(c *config) { c.checksum = on } }

// FileBase sets the binlog base name (default "mysql-bin"); files are
// base.000001, base.000002, ...
func FileBase(base string) Option { return func(c *config) { c.fileBase = base } }

// MaxRowsPerEvent splits a statement's rows (or update pairs) into Rows
// events of at most n rows after its one Table_map, as
// binlog_row_event_max_size does. 0 means no limit.
func MaxRowsPerEvent(n int) Option { return func(c *config) { c.maxRows = n } }

// ZeroLogPos writes log_pos 0 in every event header after the
// Format_description, as MariaDB 11.4+ may. The index keeps real offsets.
func ZeroLogPos() Option { return func(c *config) { c.zeroLogPos = true } }

// Domain sets the MariaDB gtid_domain_id (default 0).
func Domain(id uint32) Option { return func(c *config) { c.domain = id } }

// ServerUUID sets the MySQL server_uuid used in GTIDs.
func ServerUUID(uuid string) Option { return func(c *config) { c.uuid = uuid } }

// AnonymousGTID writes MySQL Anonymous_GTID events (gtid_mode=OFF), as in
// seed 001. Such a binlog cannot be served by GTID.
func AnonymousGTID() Option { return func(c *config) { c.anonymous = true } }

// FirstGTID starts GTID numbering at n: GNOs (MySQL) or seq_nos (MariaDB)
// 1..n-1 count as purged, so the first file's Previous_gtids or Gtid_list
// holds them and a GTID dump that lacks them fails with error 1236.
func FirstGTID(n uint64) Option { return func(c *config) { c.firstGTID = n } }

// CompressedRows makes the MariaDB flavor write compressed Rows events
// (types 166-168, log_bin_compress=ON).
func CompressedRows() Option { return func(c *config) { c.compressed = true } }

// RowsQuery makes the MySQL flavor write a Rows_query event before each
// statement (binlog_rows_query_log_events=ON).
func RowsQuery() Option { return func(c *config) { c.rowsQuery = true } }

// DefaultUUID is the MySQL server_uuid the builder uses unless told
// otherwise.
const DefaultUUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"

// NewBuilder starts a binlog with its first file open.
func NewBuilder(f Flavor, opts ...Option) *Builder {
	c := config{flavor: f, serverID: 1, checksum: true, fileBase: "mysql-bin", uuid: DefaultUUID,
		firstGTID: 1, timestamp: 1700000000, threadID: 7}
	for _, o := range opts {
		o(&c)
	}
	if f != MySQL && f != MariaDB {
		panic(fmt.Sprintf("binlogbuild: unknown flavor %q", f))
	}
	sid, err := ParseSID(c.uuid)
	if err != nil {
		panic(err)
	}
	c.sid = sid
	b := &Builder{cfg: c, nextGNO: max(c.firstGTID, 1)}
	b.openFile()
	return b
}

// pending is an event whose body is known but whose position is not yet.
type pending struct {
	typ     replication.EventType
	flags   uint16
	body    []byte
	desc    string
	midStmt bool
}

func (b *Builder) cur() *File { return &b.files[len(b.files)-1] }

// executed is the GTID state after everything written so far, in the
// flavor's set syntax ("" when empty).
func (b *Builder) executed() string {
	last := b.nextGNO - 1
	if last == 0 {
		return ""
	}
	if b.cfg.flavor == MariaDB {
		return fmt.Sprintf("%d-%d-%d", b.cfg.domain, b.cfg.serverID, last)
	}
	if last == 1 {
		return b.cfg.uuid + ":1"
	}
	return fmt.Sprintf("%s:1-%d", b.cfg.uuid, last)
}

func (b *Builder) gtidList() []mysql.MariadbGTID {
	return []mysql.MariadbGTID{{DomainID: b.cfg.domain, ServerID: b.cfg.serverID, SequenceNumber: b.nextGNO - 1}}
}

func (b *Builder) openFile() {
	name := fmt.Sprintf("%s.%06d", b.cfg.fileBase, len(b.files)+1)
	b.files = append(b.files, File{Name: name, Data: append([]byte(nil), BinlogMagic...), StartGTIDs: b.executed()})
	b.fileSeqNo = 0
	b.write(pending{typ: replication.FORMAT_DESCRIPTION_EVENT, desc: "Format_desc " + ServerVersion(b.cfg.flavor),
		body: FormatDescriptionBody(b.cfg.flavor, b.cfg.timestamp, b.cfg.checksum)}, 0, "")
	if b.cfg.flavor == MariaDB {
		var list []byte
		if b.nextGNO > 1 {
			list = GTIDListBody(b.gtidList())
		} else {
			list = GTIDListBody(nil)
		}
		b.write(pending{typ: replication.MARIADB_GTID_LIST_EVENT, body: list, desc: "Gtid_list [" + b.executed() + "]"}, 0, "")
		b.write(pending{typ: replication.MARIADB_BINLOG_CHECKPOINT_EVENT, body: BinlogCheckpointBody(name), desc: "Binlog_checkpoint " + name}, 0, "")
		return
	}
	body, err := PreviousGTIDsBody(b.executed())
	if err != nil {
		panic(err)
	}
	b.write(pending{typ: replication.PREVIOUS_GTIDS_EVENT, body: body, desc: "Previous_gtids " + b.executed()}, 0, "")
}

// write appends one event to the current file and indexes it.
func (b *Builder) write(p pending, group int, gtid string) {
	f := b.cur()
	crc := b.cfg.checksum || p.typ == replication.FORMAT_DESCRIPTION_EVENT
	start := uint32(len(f.Data))
	end := start + EventSize(p.body, crc)
	logPos := end
	if b.cfg.zeroLogPos && p.typ != replication.FORMAT_DESCRIPTION_EVENT {
		logPos = 0
	}
	ts := b.cfg.timestamp + uint32(b.groups)
	f.Data = append(f.Data, EncodeEvent(EventHeader{Timestamp: ts, Type: p.typ, ServerID: b.cfg.serverID,
		LogPos: logPos, Flags: p.flags}, p.body, crc)...)
	b.events = append(b.events, EventInfo{Index: len(b.events), File: f.Name, Start: start, End: end,
		Type: p.typ, Desc: p.desc, Group: group, GTID: gtid, MidStatement: p.midStmt})
}

// group writes one event group: the flavor's GTID event, then evs.
func (b *Builder) group(evs []pending, standalone, transactional bool) {
	b.groups++
	gno := b.nextGNO
	b.nextGNO++
	crc := b.cfg.checksum
	var head pending
	var gtid string
	switch {
	case b.cfg.flavor == MariaDB:
		var flags byte = mariaFlAllowParallel
		if standalone {
			flags = mariaFlStandalone | mariaFlDDL
		} else if transactional {
			flags |= mariaFlTransactional
		}
		gtid = fmt.Sprintf("%d-%d-%d", b.cfg.domain, b.cfg.serverID, gno)
		head = pending{typ: replication.MARIADB_GTID_EVENT, body: MariaDBGTIDBody(gno, b.cfg.domain, flags), desc: "GTID " + gtid}
		if !standalone {
			head.desc = "BEGIN GTID " + gtid
		}
	default:
		var rest uint64
		for _, p := range evs {
			rest += uint64(EventSize(p.body, crc))
		}
		// The GTID event carries the group's length, itself included.
		trxLen := rest + uint64(headerSize+mysqlGTIDBodyLen(rest))
		for trxLen != rest+uint64(EventSize(make([]byte, mysqlGTIDBodyLen(trxLen)), crc)) {
			trxLen = rest + uint64(EventSize(make([]byte, mysqlGTIDBodyLen(trxLen)), crc))
		}
		b.fileSeqNo++
		g := MySQLGTID{GNO: int64(gno), LastCommitted: b.fileSeqNo - 1, SequenceNumber: b.fileSeqNo,
			CommitMicros: uint64(b.cfg.timestamp+uint32(b.groups)) * 1e6, TransactionLength: trxLen, ServerVersion: 80036}
		typ := replication.GTID_EVENT
		if b.cfg.anonymous {
			typ = replication.ANONYMOUS_GTID_EVENT
			g.GNO = 0
			b.nextGNO-- // anonymous groups use no GNO
			head = pending{typ: typ, body: MySQLGTIDBody(g), desc: "Anonymous_GTID"}
		} else {
			g.SID = b.cfg.sid
			gtid = fmt.Sprintf("%s:%d", b.cfg.uuid, gno)
			head = pending{typ: typ, body: MySQLGTIDBody(g), desc: "GTID " + gtid}
		}
	}
	b.write(head, b.groups, gtid)
	for _, p := range evs {
		b.write(p, b.groups, gtid)
	}
}

func (b *Builder) query(q string, schema string) pending {
	return pending{typ: replication.QUERY_EVENT, body: QueryBody(b.cfg.threadID, schema, q), desc: "Query " + q}
}

func (b *Builder) xidEvent() pending {
	b.xid++
	return pending{typ: replication.XID_EVENT, body: XIDBody(b.xid), desc: fmt.Sprintf("Xid %d", b.xid)}
}

// Txn writes a committed transaction: the statements fn adds, then Xid.
func (b *Builder) Txn(fn func(t *Txn)) *Builder {
	t := b.newTxn(fn)
	b.group(append(t.evs, b.xidEvent()), false, true)
	return b
}

// RolledBack writes a transaction that ends in Query ROLLBACK, as a
// server does when non-transactional changes were made.
func (b *Builder) RolledBack(fn func(t *Txn)) *Builder {
	t := b.newTxn(fn)
	b.group(append(t.evs, b.query("ROLLBACK", "")), false, false)
	return b
}

// EmptyTxn writes a transaction with nothing inside, committed with
// Query COMMIT (what an injected empty GTID transaction looks like).
func (b *Builder) EmptyTxn() *Builder {
	t := b.newTxn(nil)
	b.group(append(t.evs, b.query("COMMIT", "")), false, false)
	return b
}

// DDL writes a standalone statement: GTID + Query on MySQL, GTID with
// FL_STANDALONE|FL_DDL + Query on MariaDB. No COMMIT follows.
func (b *Builder) DDL(schema, query string) *Builder {
	p := b.query(query, schema)
	p.desc = fmt.Sprintf("Query %s: %s", schema, query)
	b.group([]pending{p}, true, false)
	return b
}

// Rotate ends the current file with a Rotate event and opens the next.
func (b *Builder) Rotate() *Builder {
	next := fmt.Sprintf("%s.%06d", b.cfg.fileBase, len(b.files)+1)
	b.write(pending{typ: replication.ROTATE_EVENT, body: RotateBody(4, next), desc: "Rotate " + next + ":4"}, 0, "")
	b.openFile()
	return b
}

// Build returns a snapshot of what was written so far. The Builder can
// go on; a later Build extends the earlier one (see FakeSource.Append).
func (b *Builder) Build() *Binlog {
	bl := &Binlog{Flavor: b.cfg.flavor, ServerID: b.cfg.serverID, Checksum: b.cfg.checksum,
		Anonymous: b.cfg.flavor == MySQL && b.cfg.anonymous, Events: append([]EventInfo(nil), b.events...)}
	for _, f := range b.files {
		f.Data = append([]byte(nil), f.Data...)
		bl.Files = append(bl.Files, f)
	}
	return bl
}

// Txn collects the statements of one transaction.
type Txn struct {
	b   *Builder
	evs []pending
}

func (b *Builder) newTxn(fn func(t *Txn)) *Txn {
	t := &Txn{b: b}
	if b.cfg.flavor == MySQL {
		t.evs = append(t.evs, b.query("BEGIN", ""))
	}
	if fn != nil {
		fn(t)
	}
	return t
}

// Change is one table's part of a statement.
type Change struct {
	Kind  RowsKind
	Table Table
	// Rows are row images; for Update they alternate before, after.
	Rows []Row
}

// Inserted, Updated and Deleted build the Changes of a MultiTable statement.
func Inserted(t Table, rows ...Row) Change { return Change{Insert, t, rows} }

// Updated takes before, after pairs.
func Updated(t Table, beforeAfter ...Row) Change { return Change{Update, t, beforeAfter} }

// Deleted takes the deleted rows.
func Deleted(t Table, rows ...Row) Change { return Change{Delete, t, rows} }

// Insert is one INSERT statement: Table_map, Write_rows..., the last with
// STMT_END_F.
func (t *Txn) Insert(tbl Table, rows ...Row) *Txn { return t.MultiTable(Inserted(tbl, rows...)) }

// Update is one UPDATE statement; rows alternate before, after.
func (t *Txn) Update(tbl Table, beforeAfter ...Row) *Txn {
	return t.MultiTable(Updated(tbl, beforeAfter...))
}

// PartialUpdate is one UPDATE statement MySQL logs as a
// PARTIAL_UPDATE_ROWS_EVENT (binlog_row_value_options=PARTIAL_JSON): rows
// alternate before, after; a JSON column's after value may be JSONDiffs.
func (t *Txn) PartialUpdate(tbl Table, beforeAfter ...Row) *Txn {
	return t.MultiTable(Change{PartialUpdate, tbl, beforeAfter})
}

// Statement is a statement logged as its text, a Query event in the
// transaction: a row change under binlog_format STATEMENT or MIXED.
func (t *Txn) Statement(schema, query string) *Txn {
	p := t.b.query(query, schema)
	p.desc = fmt.Sprintf("Query %s: %s", schema, query)
	t.evs = append(t.evs, p)
	return t
}

// Delete is one DELETE statement.
func (t *Txn) Delete(tbl Table, rows ...Row) *Txn { return t.MultiTable(Deleted(tbl, rows...)) }

// MultiTable is one statement touching several tables (multi-table
// UPDATE, triggers, FK cascades): all Table_maps first, then the Rows
// events of each change in order; only the very last has STMT_END_F.
func (t *Txn) MultiTable(changes ...Change) *Txn {
	b := t.b
	var text []string
	var maps []pending
	seen := map[uint64]bool{}
	for _, c := range changes {
		if len(c.Rows) == 0 {
			panic("binlogbuild: a change needs rows")
		}
		text = append(text, fmt.Sprintf("%s %s.%s (%d rows)", [...]string{"INSERT INTO", "UPDATE", "DELETE FROM", "UPDATE"}[c.Kind],
			c.Table.Schema, c.Table.Name, len(c.Rows)))
		if !seen[c.Table.ID] {
			seen[c.Table.ID] = true
			maps = append(maps, pending{typ: replication.TABLE_MAP_EVENT, body: TableMapBody(c.Table), midStmt: true,
				desc: fmt.Sprintf("Table_map %s.%s id=%d", c.Table.Schema, c.Table.Name, c.Table.ID)})
		}
	}
	stmt := strings.Join(text, "; ")
	switch {
	case b.cfg.flavor == MariaDB:
		t.evs = append(t.evs, pending{typ: replication.MARIADB_ANNOTATE_ROWS_EVENT, body: []byte(stmt), desc: "Annotate_rows " + stmt})
	case b.cfg.rowsQuery:
		t.evs = append(t.evs, pending{typ: replication.ROWS_QUERY_EVENT, body: RowsQueryBody(stmt), desc: "Rows_query " + stmt})
	}
	t.evs = append(t.evs, maps...)
	for ci, c := range changes {
		if c.Kind.pairs() && len(c.Rows)%2 != 0 {
			panic(fmt.Sprintf("binlogbuild: update of %s needs before/after pairs, got %d rows", c.Table.Name, len(c.Rows)))
		}
		per := len(c.Rows)
		if c.Kind.pairs() {
			per /= 2
		}
		if b.cfg.maxRows > 0 {
			per = min(per, b.cfg.maxRows)
		}
		if c.Kind.pairs() {
			per *= 2
		}
		typ := RowsEventType(b.cfg.flavor, c.Kind, b.cfg.compressed)
		for i := 0; i < len(c.Rows); i += per {
			chunk := c.Rows[i:min(i+per, len(c.Rows))]
			last := ci == len(changes)-1 && i+per >= len(c.Rows)
			var flags uint16
			if last {
				flags = StmtEndFlag
			}
			body, err := RowsBody(typ, c.Table, flags, chunk)
			if err != nil {
				panic(err)
			}
			n := len(chunk)
			if c.Kind.pairs() {
				n /= 2
			}
			desc := fmt.Sprintf("%s %s.%s rows=%d", c.Kind, c.Table.Schema, c.Table.Name, n)
			if last {
				desc += " STMT_END_F"
			}
			t.evs = append(t.evs, pending{typ: typ, flags: 0, body: body, desc: desc, midStmt: !last})
		}
	}
	return t
}
