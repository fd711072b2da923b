package binlogstream

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
	pmysql "github.com/pingcap/tidb/pkg/parser/mysql"

	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/queryevent"
)

// The stream delivers row changes as the binlog's rows events. A change
// the server logs as a statement (binlog_format STATEMENT, or MIXED where
// it judged the statement safe) has no rows events: a listener would
// never see it. So the streamer refuses a server that does not log ROW
// before every dump, and stops at a statement that changes a selected
// table's rows, unless Config.AllowStatementDML says the caller takes
// statements as they are.

// BinlogSettings are the server variables that decide what its binlog
// holds of each change.
type BinlogSettings struct {
	Server   string // the server, for messages (host:port, never a password)
	Format   string // @@GLOBAL.binlog_format: ROW, MIXED or STATEMENT
	RowImage string // @@GLOBAL.binlog_row_image: FULL, MINIMAL, NOBLOB, ...
}

// BinlogSettingsReader is a Source whose server can say how it logs.
// The streamer asks it before every dump (start, reconnect, failover);
// a Source without a server (binlog files) is not one, and only the
// stream's own statements are checked.
type BinlogSettingsReader interface {
	BinlogSettings(ctx context.Context) (BinlogSettings, error)
}

// needsFullRowImage reports whether the run needs every column of every
// row: Config.RequireFullRowImage, or a snapshot, whose reads and the
// changes folded into them must be whole rows.
func (s *BinlogStreamer) needsFullRowImage() bool {
	return s.cfg.RequireFullRowImage || s.cfg.Snapshot != nil || s.snap != nil
}

// checkBinlogSettings refuses src's server when its binlog would not
// hold what the run needs (see BinlogSettingsError).
func (s *BinlogStreamer) checkBinlogSettings(ctx context.Context, src Source) error {
	if s.ddlOnly {
		return nil
	}
	return checkSettings(ctx, src, s.cfg.AllowStatementDML, s.needsFullRowImage())
}

// CheckBinlogSettings makes the check Run makes before every dump, on
// cfg.Source: a *BinlogSettingsError when its server does not log
// binlog_format=ROW (unless cfg.AllowStatementDML) or, when cfg needs
// whole rows (RequireFullRowImage, Snapshot), binlog_row_image=FULL. A
// program calls it to refuse a server before it does other work (creates
// tables on a target, say). A Source that is no BinlogSettingsReader
// passes.
func CheckBinlogSettings(ctx context.Context, cfg Config) error {
	return checkSettings(ctx, cfg.Source, cfg.AllowStatementDML, cfg.RequireFullRowImage || cfg.Snapshot != nil)
}

func checkSettings(ctx context.Context, src Source, allowStatements, needFull bool) error {
	if a, ok := src.(*ArchiveSource); ok {
		src = a.cfg.Live // the server the archive hands over to
	}
	r, ok := src.(BinlogSettingsReader)
	if !ok || allowStatements && !needFull {
		return nil
	}
	st, err := r.BinlogSettings(ctx)
	if err != nil {
		return err
	}
	return settingsError(st, allowStatements, needFull)
}

// settingsError is the refusal of st, nil when the run can stream it.
func settingsError(st BinlogSettings, allowStatements, needFull bool) error {
	if !allowStatements && !strings.EqualFold(st.Format, "ROW") {
		return &BinlogSettingsError{Server: st.Server, Variable: "binlog_format", Value: st.Format, Want: "ROW",
			cost:     "changes it logs as statements have no rows for the stream to deliver",
			override: "a program that takes such statements as they are sets Config.AllowStatementDML"}
	}
	if needFull && !strings.EqualFold(st.RowImage, "FULL") {
		return &BinlogSettingsError{Server: st.Server, Variable: "binlog_row_image", Value: st.RowImage, Want: "FULL",
			cost: "its rows events leave out columns that a copy of each row needs"}
	}
	return nil
}

// decodeFilterer is a Source with a table filter (SyncerConfig.DecodeTable,
// DirConfig.DecodeTable): the selected tables.
type decodeFilterer interface {
	decodeFilter() func(schema, table string) bool
}

// checkStatement stops the stream at a row change logged as a statement
// (a Query event IsDML accepts, or an Execute_load_query event) that
// changes a selected table, or tables it cannot tell; nil for any other
// event.
func (s *BinlogStreamer) checkStatement(be *replication.BinlogEvent, d *decision) error {
	if s.cfg.AllowStatementDML || s.ddlOnly {
		return nil
	}
	var db, q, vars []byte
	switch e := be.Event.(type) {
	case *replication.QueryEvent:
		if !ddl.IsDML(e.Query) {
			return nil
		}
		db, q, vars = e.Schema, e.Query, e.StatusVars
	case *replication.ExecuteLoadQueryEvent:
		db, q, vars = executeLoadQuery(be.RawData, e, s.checksumLen)
	default:
		return nil
	}
	var want func(schema, table string) bool
	if f, ok := s.source().(decodeFilterer); ok {
		want = f.decodeFilter()
	}
	sql := string(q)
	mode := pmysql.SQLMode(queryevent.SQLMode(vars) & uint64(ddl.ParserModes))
	keys, ok := ddl.DMLTargets(string(db), sql, mode)
	if ok && len(keys) == 0 {
		return nil // CREATE TABLE without a SELECT after all
	}
	var hit []string
	for _, k := range keys {
		if want == nil || want(k.Schema, k.Name) {
			hit = append(hit, k.String())
		}
	}
	if ok && len(hit) == 0 {
		return nil // unselected tables only
	}
	return &StatementDMLError{Start: d.start, End: d.end, GTID: d.gtid, Statement: ddl.Truncate(sql), Tables: hit}
}

// executeLoadQuery reads the database, statement and status variables of
// an Execute_load_query event (a LOAD DATA logged as a statement), which
// go-mysql does not decode. raw is the whole event; checksumLen the
// bytes of its checksum at the end.
func executeLoadQuery(raw []byte, e *replication.ExecuteLoadQueryEvent, checksumLen int) (db, q, vars []byte) {
	const postHeader = 4 + 4 + 1 + 2 + 2 + 4 + 4 + 4 + 1
	body := raw[min(len(raw), replication.EventHeaderSize):]
	if len(body) < postHeader+checksumLen {
		return nil, nil, nil
	}
	body = body[:len(body)-checksumLen]
	n := int(binary.LittleEndian.Uint16(body[11:13]))
	rest := body[postHeader:]
	if len(rest) < n+int(e.SchemaLength)+1 {
		return nil, nil, nil
	}
	vars, rest = rest[:n], rest[n:]
	db, rest = rest[:e.SchemaLength], rest[e.SchemaLength+1:]
	return db, bytes.TrimRight(rest, "\x00"), vars
}

func (s *SyncerSource) decodeFilter() func(schema, table string) bool { return s.cfg.DecodeTable }
func (s *DirSource) decodeFilter() func(schema, table string) bool    { return s.cfg.DecodeTable }

func (a *ArchiveSource) decodeFilter() func(schema, table string) bool {
	if f, ok := a.cfg.Live.(decodeFilterer); ok {
		return f.decodeFilter()
	}
	return nil
}

// formatDescription follows a file's Format_description: its checksum
// length, and the schema tracker's view of the file.
func (s *BinlogStreamer) formatDescription(be *replication.BinlogEvent) {
	s.checksumLen = 0
	if fde, ok := be.Event.(*replication.FormatDescriptionEvent); ok && fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		s.checksumLen = replication.BinlogChecksumLength
	}
	if s.sch != nil {
		s.sch.formatDescription(be)
	}
}
