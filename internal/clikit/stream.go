package clikit

import "github.com/binlogstream/binlogstream"

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
// chunkRows rows a chunk (0: the library's defaults).
func Snapshot(tables binlogstream.TablePatterns, readers, chunkRows uint) *binlogstream.SnapshotConfig {
	if tables == nil {
		tables, _ = binlogstream.ParseTablePatterns("*.*")
	}
	return &binlogstream.SnapshotConfig{Tables: tables, Readers: int(readers), ChunkRows: int(chunkRows)}
}
