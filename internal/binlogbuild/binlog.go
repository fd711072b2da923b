package binlogbuild

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Binlog is an encoded binlog: its files and an index of every real event
// written, so tests can name positions ("right after the 4th Write_rows").
type Binlog struct {
	Flavor   Flavor
	ServerID uint32
	Checksum bool
	// Anonymous is set for MySQL binlogs written with Anonymous_GTID events.
	Anonymous bool
	Files     []File
	// Events lists every event in file order (not the magic, not the fake
	// events a server adds to a dump).
	Events []EventInfo
}

// File is one binlog file.
type File struct {
	Name string
	// Data is the whole file, magic included.
	Data []byte
	// StartGTIDs is the GTID state the file starts with, as its
	// Previous_gtids (MySQL set syntax) or Gtid_list (MariaDB
	// "domain-server-seq" list) says; "" when empty.
	StartGTIDs string
}

// EventInfo locates one event.
type EventInfo struct {
	Index int
	File  string
	// Start and End are the event's offsets in File; End is what a
	// non-zero header log_pos says.
	Start, End uint32
	Type       replication.EventType
	Desc       string
	// Group numbers event groups (transactions, DDL) from 1; 0 for events
	// outside any group (Format_description, Previous_gtids, Rotate...).
	Group int
	// GTID of the group ("uuid:gno" or "domain-server-seq"); "" outside
	// groups and for Anonymous_GTID groups.
	GTID string
	// MidStatement is set when End falls between a statement's first
	// Table_map and its STMT_END_F Rows event: a dump started at End fails.
	MidStatement bool
}

// StartPos is the position of the event itself.
func (e EventInfo) StartPos() mysql.Position { return mysql.Position{Name: e.File, Pos: e.Start} }

// EndPos is the position right after the event.
func (e EventInfo) EndPos() mysql.Position { return mysql.Position{Name: e.File, Pos: e.End} }

func (e EventInfo) String() string {
	return fmt.Sprintf("#%d %s:%d-%d %s", e.Index, e.File, e.Start, e.End, e.Desc)
}

// Nth returns the n-th (1-based) event of type typ.
func (bl *Binlog) Nth(typ replication.EventType, n int) (EventInfo, bool) {
	for _, e := range bl.Events {
		if e.Type == typ {
			if n--; n == 0 {
				return e, true
			}
		}
	}
	return EventInfo{}, false
}

// File returns the file called name.
func (bl *Binlog) File(name string) (File, bool) {
	for _, f := range bl.Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// ParseGTIDSet parses s in the binlog's flavor.
func (bl *Binlog) ParseGTIDSet(s string) (mysql.GTIDSet, error) {
	return mysql.ParseGTIDSet(string(bl.Flavor), s)
}

// ExecutedBefore is the GTID set of a client that has applied every group
// complete before event i (and the purged ones before the first file):
// what it would resume with. The group event i belongs to is not in it.
func (bl *Binlog) ExecutedBefore(i int) mysql.GTIDSet {
	set, err := bl.ParseGTIDSet(bl.Files[0].StartGTIDs)
	if err != nil {
		panic(err)
	}
	for j := 0; j < i && j < len(bl.Events); j++ {
		e := bl.Events[j]
		last := j+1 == len(bl.Events) || bl.Events[j+1].Group != e.Group
		if e.GTID == "" || !last {
			continue
		}
		if err := set.Update(e.GTID); err != nil {
			panic(err)
		}
	}
	return set
}

// WriteDir writes the binlog files into dir, for BinlogParser.ParseFile.
func (bl *Binlog) WriteDir(dir string) error {
	for _, f := range bl.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Seed001Table is the table of the Seed001 layout (table id as in the seed).
var Seed001Table = Table{ID: 5131, Schema: "app_db", Name: "_other_table_gho", Columns: []Column{
	{Name: "id", Type: BigInt}, {Name: "v", Type: Varchar(64)}, {Name: "n", Type: Int},
}}

// Seed001 builds the layout of seed 001 (gh-ost checkpoint between a
// Table_map and its STMT_END_F): a one-row transaction, then a transaction
// of BEGIN, one Table_map, 5 Write_rows of which only the last has
// STMT_END_F, Xid, then another one-row transaction. The seed's server ran
// without GTIDs: pass AnonymousGTID() for that; by default the groups get
// real GTIDs so the same layout can be served by GTID too.
func Seed001(f Flavor, opts ...Option) *Binlog {
	b := NewBuilder(f, append([]Option{MaxRowsPerEvent(2)}, opts...)...)
	row := func(id int64) Row { return Row{id, fmt.Sprintf("row-%d", id), int32(id % 7)} }
	b.Txn(func(t *Txn) { t.Insert(Seed001Table, row(1)) })
	var rows []Row
	for id := int64(10); id < 20; id++ {
		rows = append(rows, row(id))
	}
	b.Txn(func(t *Txn) { t.Insert(Seed001Table, rows...) })
	b.Txn(func(t *Txn) { t.Insert(Seed001Table, row(2)) })
	return b.Build()
}
