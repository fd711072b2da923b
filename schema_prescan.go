package binlogstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/binlogstream/binlogstream/internal/ddl"
	"github.com/binlogstream/binlogstream/internal/schema"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"
)

// SchemaPrescan records what DDL touches between From and a snapshot's
// position: any stream position from From up to the snapshot sees the
// snapshot's other tables exactly as the snapshot has them, since nothing
// changed them in between.
type SchemaPrescan struct {
	From ResumePosition `json:"from"`
	// The snapshot it leads to.
	SnapshotAt       Position `json:"snapshot_at"`
	SnapshotExecuted string   `json:"snapshot_executed,omitempty"`
	// Tables are [schema, table] pairs a DDL touched; Databases those
	// created, altered or dropped (all their tables count as touched).
	Tables    [][2]string `json:"tables,omitempty"`
	Databases []string    `json:"databases,omitempty"`
}

func (p *SchemaPrescan) leadsTo(s *SchemaSnapshot) bool {
	return p.SnapshotAt == s.Position && p.SnapshotExecuted == s.Executed
}

// findPrescan returns a prescan to s that covers position r.
func findPrescan(recs []SchemaRecord, s *SchemaSnapshot, r ResumePosition) *SchemaPrescan {
	for i := range recs {
		p := recs[i].Prescan
		if p == nil || !p.leadsTo(s) || p.From.IsGTID() != r.IsGTID() {
			continue
		}
		if !r.IsGTID() {
			if p.From.Streamed.Compare(r.Streamed) <= 0 {
				return p
			}
			continue
		}
		have, err1 := mysql.ParseGTIDSet(r.Flavor, r.Executed)
		from, err2 := mysql.ParseGTIDSet(p.From.Flavor, p.From.Executed)
		if err1 == nil && err2 == nil && have.Contain(from) {
			return p
		}
	}
	return nil
}

// installUntouched adds the snapshot's tables no DDL touches between the
// prescan's start and the snapshot.
func installUntouched(h *schema.History, s *SchemaSnapshot, p *SchemaPrescan) {
	for _, st := range s.Tables {
		if slices.Contains(p.Databases, st.Schema) || slices.Contains(p.Tables, [2]string{st.Schema, st.Name}) {
			continue
		}
		if _, ok := h.DBs[st.Schema]; !ok && !slices.Contains(p.Databases, st.Schema) {
			h.DBs[st.Schema] = s.Databases[st.Schema]
		}
		h.Tables[ddl.Key{Schema: st.Schema, Name: st.Name}] = histTableOf(st)
	}
}

// prescan is the DDL scan from `from` to the snapshot's position:
// listed by the server where it can, else streamed from a dump.
func prescan(ctx context.Context, src Source, from ResumePosition, snap *SchemaSnapshot, log logrus.FieldLogger) (*SchemaPrescan, error) {
	p, err := listedPrescan(ctx, src, from, snap)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		log.WithError(err).Info("listing the binlog's statements up to the schema snapshot failed; reading the binlog instead")
	}
	if p != nil {
		return p, nil
	}
	return streamedPrescan(ctx, src, from, snap, log)
}

// listedPrescan is the DDL scan from `from` to the snapshot's position
// with the statements listed by the server, which is cheaper than a dump:
// the rows are not sent. It returns nil, nil where src cannot list them.
// An error (the server refused, or a DDL statement is listed without its
// database) leaves the scan to streamedPrescan.
func listedPrescan(ctx context.Context, src Source, from ResumePosition, snap *SchemaSnapshot) (*SchemaPrescan, error) {
	l, ok := src.(statementLister)
	if !ok {
		return nil, nil
	}
	p := newPrescan(from, snap)
	if err := l.listStatements(ctx, from, snap.Position, p.note); err != nil {
		return nil, err
	}
	return p.SchemaPrescan, nil
}

// streamedPrescan streams src from `from` to the snapshot's position and
// collects the targets of every DDL statement on the way.
func streamedPrescan(ctx context.Context, src Source, from ResumePosition, snap *SchemaSnapshot, log logrus.FieldLogger) (*SchemaPrescan, error) {
	start := from
	if ro, ok := src.(rowlessOpener); ok {
		// Only the DDL matters: no rows are decoded. So the scan starts
		// outside any statement (a start inside one drops the rows already
		// delivered, which needs them counted), where from's transaction or
		// statement began: no DDL lies in between, as a DDL statement is a
		// transaction of its own.
		src = rowlessSource{ro}
		var err error
		if from.IsGTID() {
			start, err = StartAtGTID(from.Flavor, from.Executed)
		} else {
			start = StartAt(from.Safe)
		}
		if err != nil {
			return nil, err
		}
	} else if rs, ok := src.(ReplaySkipper); ok && !from.IsGTID() {
		src = skipRowsSource{rs, snap.Position} // rows up to the snapshot's offset stay undecoded
	}
	s, err := NewBinlogStreamer(Config{Source: src, Start: start, Logger: log})
	if err != nil {
		return nil, err
	}
	s.schemaOff, s.ddlOnly = true, true
	defer s.Close()
	if from.IsGTID() {
		if err := s.StopAtGTID(snap.Executed); err != nil {
			return nil, err
		}
	} else {
		s.StopAt(snap.Position)
	}
	p := newPrescan(from, snap)
	s.AddListener(func(_ context.Context, ev Event) error {
		if q, ok := ev.Event.(*replication.QueryEvent); ok {
			p.add(string(q.Schema), queryText(q, from.Flavor))
		}
		return nil
	})
	if err := s.Run(ctx); err != nil {
		return nil, err
	}
	return p.SchemaPrescan, nil
}

// prescanning collects what the DDL statements of a prescan touch.
type prescanning struct {
	*SchemaPrescan
	scratch *schema.History
}

func newPrescan(from ResumePosition, snap *SchemaSnapshot) prescanning {
	return prescanning{
		SchemaPrescan: &SchemaPrescan{From: from, SnapshotAt: snap.Position, SnapshotExecuted: snap.Executed},
		scratch:       schema.NewHistory(),
	}
}

// add notes the tables and databases a statement run with default
// database db touches, when it is DDL, and returns the tables.
func (p prescanning) add(db, query string) []ddl.Key {
	if !ddl.IsDDL([]byte(query)) {
		return nil
	}
	ch, err := p.scratch.Apply(db, query)
	if err != nil { // a contradiction in a history that starts empty: use the names alone
		ch.Touched = append(ch.Touched, ddl.Targets(db, query)...)
	}
	for _, k := range ch.Touched {
		if !slices.Contains(p.Tables, [2]string{k.Schema, k.Name}) {
			p.Tables = append(p.Tables, [2]string{k.Schema, k.Name})
		}
	}
	for _, db := range ch.DBs {
		if !slices.Contains(p.Databases, db) {
			p.Databases = append(p.Databases, db)
		}
	}
	return ch.Touched
}

// note is add for a statement as a statement list gives it: the text
// of a Query event, "use `db`; " first when it ran with a default
// database (see parseQueryInfo). A DDL statement listed without one that
// names a table without its database cannot be placed: an error.
func (p prescanning) note(info string) error {
	db, query := parseQueryInfo(info)
	if !utf8.ValidString(query) && ddl.IsDDL([]byte(query)) {
		// sent in another charset, which only the binlog's event says
		return fmt.Errorf("the statement %q is listed in a charset other than UTF-8", ddl.Truncate(strings.ToValidUTF8(query, "?")))
	}
	for _, k := range p.add(db, query) {
		if k.Schema == "" {
			return fmt.Errorf("the statement %q is listed without its default database", ddl.Truncate(query))
		}
	}
	return nil
}

// parseQueryInfo splits a Query event's text as SHOW BINLOG EVENTS lists
// it (MariaDB, sql_quote_show_create on): "use `db`; QUERY" when it ran
// with a default database (a backquote in db doubled), else QUERY.
func parseQueryInfo(info string) (db, query string) {
	const use = "use `"
	if !strings.HasPrefix(info, use) {
		return "", info
	}
	var name []byte
	for i := len(use); i < len(info); i++ {
		if info[i] != '`' {
			name = append(name, info[i])
			continue
		}
		if i+1 < len(info) && info[i+1] == '`' {
			name = append(name, '`')
			i++
			continue
		}
		if strings.HasPrefix(info[i+1:], "; ") {
			return string(name), info[i+3:]
		}
		break
	}
	return "", info // not a use prefix after all
}

// statementLister is a Source that lists the Query events of its binlog
// from a stream's start to a position without a dump, leaving out those
// a dump from there leaves out. each gets each one's text as
// parseQueryInfo reads it; an error from each ends the list with it.
type statementLister interface {
	listStatements(ctx context.Context, from ResumePosition, to Position, each func(info string) error) error
}

// rowlessOpener is a Source whose dumps can leave the rows of every table
// undecoded and undelivered, positions still moving through them (as
// SyncerConfig.DecodeTable wanting no table).
type rowlessOpener interface {
	openFileRowless(ctx context.Context, pos mysql.Position) (Stream, error)
	openGTIDRowless(ctx context.Context, set mysql.GTIDSet) (Stream, error)
}

// rowlessSource opens its dumps rowless.
type rowlessSource struct{ r rowlessOpener }

func (s rowlessSource) OpenFile(ctx context.Context, pos mysql.Position) (Stream, error) {
	return s.r.openFileRowless(ctx, pos)
}

func (s rowlessSource) OpenGTID(ctx context.Context, set mysql.GTIDSet) (Stream, error) {
	return s.r.openGTIDRowless(ctx, set)
}

// noTable is a table filter that wants no table's rows.
func noTable(string, string) bool { return false }

// skipRowsSource opens file-mode dumps that leave the rows events up to
// a position undecoded.
type skipRowsSource struct {
	ReplaySkipper
	upTo Position
}

func (s skipRowsSource) OpenFile(ctx context.Context, pos mysql.Position) (Stream, error) {
	return s.OpenFileReplay(ctx, pos, s.upTo)
}

func (s skipRowsSource) OpenGTID(ctx context.Context, set mysql.GTIDSet) (Stream, error) {
	return nil, errors.New("binlogstream: the DDL scan opens file-mode dumps only")
}
