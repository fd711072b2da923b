package clikit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/binlogstream/binlogstream"
)

// Failover is the failover configuration of a command's failover servers
// (--failover-to, --failover): candidates tried in order, each dumped as
// syncer configures it and validated by the streamer before it is used.
// It is nil without servers.
func Failover(servers []binlogstream.DSN, syncer func(binlogstream.DSN) binlogstream.SyncerConfig) (*binlogstream.FailoverConfig, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	cfgs := make([]binlogstream.SyncerConfig, 0, len(servers))
	for _, d := range servers {
		cfgs = append(cfgs, syncer(d))
	}
	cands, err := binlogstream.SyncerCandidates(cfgs...)
	if err != nil {
		return nil, err
	}
	return &binlogstream.FailoverConfig{Resolver: binlogstream.StaticResolver(cands...)}, nil
}

// FailoverReconnects is the reconnects to a lost source before a command
// with failover servers fails over: about a second of a dead server, not
// the minute the library's default reconnects take.
const FailoverReconnects = 3

// Snapshot is the snapshot configuration of --snapshot: the tables
// tables selects (every table when nil), readers chunk reads at once and
// chunkRows rows a chunk (0: the library's defaults), and what to do with
// a table that has no key (--snapshot-keyless).
func Snapshot(tables binlogstream.TablePatterns, readers, chunkRows uint, keyless binlogstream.KeylessPolicy) *binlogstream.SnapshotConfig {
	if tables == nil {
		tables, _ = binlogstream.ParseTablePatterns("*.*")
	}
	return &binlogstream.SnapshotConfig{Tables: tables, Readers: int(readers), ChunkRows: int(chunkRows), Keyless: keyless}
}

// KeylessUsage is the help of --snapshot-keyless.
const KeylessUsage = "--snapshot: what to do with a selected table that has no primary key and no UNIQUE key of NOT NULL columns " +
	"(it cannot be read in key chunks): refuse (default: exit 1 at start, before any line, naming every such table) " +
	"or skip (write its changes, not its rows, with a warning naming it)"

// ParseKeyless parses --snapshot-keyless: refuse or skip.
func ParseKeyless(s string) (binlogstream.KeylessPolicy, error) {
	switch s {
	case "refuse":
		return binlogstream.KeylessRefuse, nil
	case "skip":
		return binlogstream.KeylessSkip, nil
	}
	return 0, fmt.Errorf("--snapshot-keyless %q: want refuse or skip", s)
}

// ExplainSnapshotKey gives a *binlogstream.SnapshotKeyError in err the
// command's ways out (--tables, --snapshot-keyless skip); other errors
// pass as they are.
func ExplainSnapshotKey(err error) error {
	var ke *binlogstream.SnapshotKeyError
	if !errors.As(err, &ke) {
		return err
	}
	return &keylessError{ke}
}

type keylessError struct{ *binlogstream.SnapshotKeyError }

func (e *keylessError) Error() string {
	names := make([]string, len(e.Tables))
	for i, id := range e.Tables {
		db, tbl, _ := strings.Cut(id, ".")
		names[i] = "`" + db + "`.`" + tbl + "`"
	}
	return fmt.Sprintf("--snapshot: %s: no primary key and no UNIQUE key of NOT NULL columns, so the rows cannot be read in key chunks; "+
		"name the tables to read with --tables, leaving these out, or add --snapshot-keyless skip to stream their changes without reading their rows",
		strings.Join(names, ", "))
}

func (e *keylessError) Unwrap() error { return e.SnapshotKeyError }

// Describe is a position for a log or progress line: the binlog file and
// offset, or in GTID mode the executed set and the transaction in flight.
func Describe(p binlogstream.ResumePosition) string {
	if !p.IsGTID() {
		return p.Streamed.String()
	}
	s := "gtid " + p.Executed
	if p.Executed == "" {
		s = "gtid (none)"
	}
	if p.GTID != "" {
		s += " + inside " + p.GTID
	}
	return s
}
