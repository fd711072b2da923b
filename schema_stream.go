package binlogstream

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/redact"
	"github.com/go-mysql-org/go-mysql/replication"
)

// SchemaConfig configures the schema history behind Event.Table.
//
// Where the Table_map carries column names (binlog_row_metadata=FULL) they
// are used as they are. Otherwise (MINIMAL, or NO_LOG, MariaDB 10.11's
// default) the names come from a schema history: a snapshot of
// information_schema proven to match one binlog position, advanced by
// every DDL statement the stream reads, in binlog order. Tables the
// stream sees created are known from their CREATE statement without a
// snapshot. Every Table_map is checked against the history; a mismatch
// stops Run with a *SchemaMismatchError.
type SchemaConfig struct {
	// Store persists the history, so that a streamer resumed from a token
	// (after a crash, a reconnect or a failover) uses the schema as of
	// that token, never the live one. A DDL statement's record is durable
	// before its event is delivered. Nil keeps the history in memory for
	// the streamer's life. See NewFileSchemaStore.
	Store SchemaStore
	// Snapshot takes an information_schema snapshot at the first Run when
	// the history holds none. The Source must implement SchemaSnapshotter
	// (SyncerSource does). Before the snapshot's position, tables that
	// were not created in the streamed binlog stay unknown, but for those
	// no DDL touches from the start to the snapshot: that stretch of the
	// binlog is read once for its DDL and the result recorded (on MariaDB
	// the server lists its statements, SHOW BINLOG EVENTS, sending no
	// rows; elsewhere a dump reads it, its rows undecoded).
	Snapshot bool
	// Databases limits the snapshot to these databases; empty means every
	// database but the server's own (mysql, information_schema,
	// performance_schema, sys).
	Databases []string
}

// SchemaStore persists a schema history: an append-only list of records.
type SchemaStore interface {
	// Load returns every record appended so far, in order.
	Load() ([]SchemaRecord, error)
	// Append makes rec durable before it returns.
	Append(rec SchemaRecord) error
}

// SchemaSnapshotter reads a SchemaSnapshot of databases (all but the
// system ones when empty) and the binlog position it is exact at.
type SchemaSnapshotter interface {
	SchemaSnapshot(ctx context.Context, databases []string) (*SchemaSnapshot, error)
}

// schemaLog is the streamer's copy of the history's records: those
// loaded from the store and those appended since, indexed by DDL key.
type schemaLog struct {
	opened bool
	store  SchemaStore
	recs   []SchemaRecord
	stmts  map[string]string // DDL key -> statement
}

// open loads the store and takes the snapshot, once per streamer.
func (l *schemaLog) open(ctx context.Context, cfg *Config, src Source, from ResumePosition) error {
	if l.opened {
		return nil
	}
	l.store, l.stmts = cfg.Schema.Store, map[string]string{}
	if l.store != nil {
		recs, err := l.store.Load()
		if err != nil {
			return fmt.Errorf("%w: load: %v", ErrSchemaHistory, err)
		}
		for i := range recs {
			if recs[i].isDDL() {
				l.stmts[recs[i].key()] = recs[i].Statement
			}
		}
		l.recs = recs
	}
	if cfg.Schema.Snapshot && !l.hasSnapshot(from) {
		sn, ok := src.(SchemaSnapshotter)
		if !ok {
			return configError("Schema.Snapshot: the source (%T) cannot read a schema snapshot (no SchemaSnapshot method)", src)
		}
		snap, err := sn.SchemaSnapshot(ctx, cfg.Schema.Databases)
		if err != nil {
			return fmt.Errorf("binlogstream: schema snapshot: %w", err)
		}
		if from.IsGTID() && (snap.Executed == "" || snap.Flavor != from.Flavor) {
			return fmt.Errorf("%w: the snapshot has no %s GTID position to place it in a GTID-mode stream", ErrSchemaHistory, from.Flavor)
		}
		if err := l.append(SchemaRecord{Snapshot: snap}); err != nil {
			return err
		}
	}
	if err := l.prescanIfNeeded(ctx, cfg, src, from); err != nil {
		return err
	}
	l.opened = true
	return nil
}

// prescanIfNeeded reads the binlog from `from` to a snapshot that is
// newer than it, once, and records the tables DDL touches in between: the
// snapshot's other tables are then known from `from` on.
func (l *schemaLog) prescanIfNeeded(ctx context.Context, cfg *Config, src Source, from ResumePosition) error {
	_, _, pending, err := historyAt(l.recs, from)
	if err != nil || pending == nil || findPrescan(l.recs, pending, from) != nil {
		return err
	}
	cfg.Logger.WithField("from", from.describe()).Info("reading the binlog up to the schema snapshot's position for the DDL in between")
	p, err := prescan(ctx, src, from, pending, cfg.Logger)
	if err != nil {
		return fmt.Errorf("binlogstream: read the DDL between the start and the schema snapshot: %w", err)
	}
	if err := l.append(SchemaRecord{Prescan: p}); err != nil {
		return err
	}
	cfg.Logger.Info("read the binlog up to the schema snapshot's position: recorded, not read again")
	return nil
}

// hasSnapshot reports whether a snapshot usable in from's mode exists.
func (l *schemaLog) hasSnapshot(from ResumePosition) bool {
	for i := range l.recs {
		if s := l.recs[i].Snapshot; s != nil && (!from.IsGTID() || s.Flavor == from.Flavor && s.Executed != "") {
			return true
		}
	}
	return false
}

// append persists a record unless the history holds it; a DDL record
// whose key holds another statement means the history is another
// binlog's.
func (l *schemaLog) append(rec SchemaRecord) error {
	if rec.isDDL() {
		k := rec.key()
		if stmt, ok := l.stmts[k]; ok {
			if !sameStatement(stmt, &rec) {
				return fmt.Errorf("%w: the binlog has %q at %s, the stored history %q there: the history belongs to another binlog",
					ErrSchemaHistory, ddl.Truncate(rec.Statement), rec.End, ddl.Truncate(stmt))
			}
			return nil
		}
		l.stmts[k] = rec.Statement
	}
	if l.store != nil {
		if err := l.store.Append(rec); err != nil {
			return fmt.Errorf("%w: append: %v", ErrSchemaHistory, err)
		}
	}
	l.recs = append(l.recs, rec)
	return nil
}

// sameStatement reports whether a stored DDL statement is rec's. A
// record written before statements were masked holds the statement in
// clear; masked, it is rec's.
func sameStatement(stored string, rec *SchemaRecord) bool {
	want := asStored(rec.Statement)
	if stored = asStored(stored); stored == want {
		return true
	}
	for _, m := range [...]redact.Mode{sqlModeSecrets(rec.SQLMode), redact.Unsure} {
		if redact.String(stored, m) == want {
			return true
		}
	}
	return false
}

// asStored is a statement as a JSON store gives it back: each byte that
// is not UTF-8 (a statement in a charset that would not decode) replaced
// by U+FFFD, as encoding/json does.
func asStored(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// trackerAt returns a schema tracker for a dump resumed from r.
func (l *schemaLog) trackerAt(r ResumePosition) (*schemaTracker, error) {
	h, applied, pending, err := historyAt(l.recs, r)
	if err != nil {
		return nil, err
	}
	return newSchemaTracker(r.Flavor, h, applied, pending), nil
}

// observeSchema follows one event in the schema history and persists a
// new DDL record before the event can be acknowledged.
func (s *BinlogStreamer) observeSchema(be *replication.BinlogEvent, d *decision) (*Table, error) {
	if s.sch == nil {
		return nil, nil
	}
	t, rec, err := s.sch.observe(be, d)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		if err := s.schema.append(*rec); err != nil {
			return nil, err
		}
	}
	return t, nil
}
