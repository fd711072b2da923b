package binlogstream

import (
	"github.com/binlogstream/binlogstream/internal/chunkread"
	"github.com/go-mysql-org/go-mysql/mysql"
)

// Watermark chunk reads, for servers without binlog_snapshot_position
// (MySQL). Each chunk is read as
//
//	low  := SHOW MASTER STATUS (SHOW BINARY LOG STATUS on MySQL 8.4)
//	BEGIN; SELECT ... LOCK IN SHARE MODE; COMMIT
//	high := SHOW MASTER STATUS
//
// and attached when the stream reaches high, with every row change the
// stream saw after low folded into it (snapshot.Fold): each key ends as
// its last change in (low, high] left it, else as the SELECT read it.
// That is the key's state at high when the SELECT's row of a key no
// change of the window touched is its state at low, which needs two
// things of the read:
//
//   - It holds every transaction logged at or before low. A plain
//     consistent read does not: a commit is written to the binlog before
//     InnoDB makes it visible, so low can count a transaction the
//     SELECT's read view does not see (and the fold from low would then
//     lose it). A locking read does: until InnoDB commits it, a logged
//     transaction still holds the locks on every index record it wrote
//     (deleted records stay in the index, delete-marked, until its commit;
//     inserted and moved keys are in it already), so the SELECT waits for
//     it on any row of the chunk it touched and then reads the committed
//     row. A row of the range that the scan passed and found no record
//     for was written by no transaction logged before low: a transaction
//     writes its records before it is logged.
//   - It holds no transaction logged after high: what the SELECT sees is
//     committed in InnoDB, so logged already, before high is read.
//
// Between low and high the read may hold any of the window's
// transactions, row by row (a locking read does not read at one
// instant): the fold overrides every key they touched. The read's locks
// are shared and live for one chunk read; READ COMMITTED keeps them to
// the rows read (no gap locks), and a read chosen as a deadlock victim is
// read again. Only positions are compared: the stream's own positions
// order the changes, so the watermarks need no GTID set. The reads are
// chunkread.Reader's, in its Watermark mode.

// snapWatermarks makes every flavor read chunks with watermarks: the
// tests run the algorithm against MariaDB under heavy writes.
var snapWatermarks bool

// snapWatermarkNaive, for the tests' negative controls: a naive variant.
var snapWatermarkNaive chunkread.Naive

// watermarkReads reports whether chunks are read with watermarks: on
// MySQL, which has no binlog_snapshot_position.
func (s *SyncerSource) watermarkReads() bool {
	return snapWatermarks || s.cfg.Flavor != mysql.MariaDBFlavor
}
