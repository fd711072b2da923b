package binlogstream

import (
	"errors"
	"fmt"
	"strings"
	"time"

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
// order the changes, so the watermarks need no GTID set.

// snapWatermarks makes every flavor read chunks with watermarks: the
// tests run the algorithm against MariaDB under heavy writes.
var snapWatermarks bool

// snapWatermarkNaive, for the tests' negative controls: a naive variant.
var snapWatermarkNaive watermarkNaive

type watermarkNaive uint8

const (
	naiveNone      watermarkNaive = iota
	naiveLowAfter                 // low taken after the SELECT (= high)
	naiveNoLocking                // a consistent read, no locks
)

// watermarkReads reports whether chunks are read with watermarks: on
// MySQL, which has no binlog_snapshot_position.
func (s *SyncerSource) watermarkReads() bool {
	return snapWatermarks || s.cfg.Flavor != mysql.MariaDBFlavor
}

// watermarkRetries bounds the reads of one chunk that end as a deadlock
// victim or in a lock wait timeout.
const watermarkRetries = 50

type watermarkChunks struct {
	*syncerChunks
	status string // the statement that reads the binlog position, once known
}

func newWatermarkChunks(r *syncerChunks) (chunkReader, error) {
	// A read waiting for a lock keeps the shared locks it took on the
	// rows before: it gives up after 5 s and reads the chunk again.
	for _, q := range []string{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET SESSION innodb_lock_wait_timeout = 5"} {
		if _, err := r.conn.Execute(q); err != nil {
			r.done()
			return nil, fmt.Errorf("binlogstream: snapshot: set up the reader's session: %w", err)
		}
	}
	return &watermarkChunks{syncerChunks: r}, nil
}

func (r *watermarkChunks) readChunk(t *snapTable, after []any, n int) (*chunkRead, error) {
	q, err := chunkQuery(t, after, n)
	if err != nil {
		return nil, err
	}
	if snapWatermarkNaive != naiveNoLocking {
		q += " LOCK IN SHARE MODE"
	}
	for attempt := 1; ; attempt++ {
		res, err := r.once(q, t.hidden)
		if err == nil {
			if err := r.keys(t, res); err != nil {
				return nil, err
			}
			return res, nil
		}
		var me *mysql.MyError
		if errors.As(err, &me) && (me.Code == mysql.ER_LOCK_DEADLOCK || me.Code == mysql.ER_LOCK_WAIT_TIMEOUT) && attempt < watermarkRetries {
			continue
		}
		if attempt > 1 {
			return nil, fmt.Errorf("binlogstream: snapshot of %s: read %d times: %w", t.id, attempt, err)
		}
		return nil, fmt.Errorf("binlogstream: snapshot of %s: %w", t.id, err)
	}
}

// once reads one chunk between its watermarks.
func (r *watermarkChunks) once(q string, hidden int) (*chunkRead, error) {
	low, err := r.position()
	if err != nil {
		return nil, err
	}
	res := &chunkRead{}
	began := time.Now()
	if _, err := r.conn.Execute("START TRANSACTION"); err != nil {
		return nil, err
	}
	if err := r.selectRows(q, res, hidden); err != nil {
		_, _ = r.conn.Execute("ROLLBACK")
		return nil, err
	}
	if _, err := r.conn.Execute("COMMIT"); err != nil {
		return nil, err
	}
	res.age = time.Since(began)
	if res.at, err = r.position(); err != nil {
		return nil, err
	}
	if snapWatermarkNaive == naiveLowAfter {
		low = res.at
	}
	res.low = &low
	return res, nil
}

// position reads the server's binlog position: SHOW MASTER STATUS, or
// SHOW BINARY LOG STATUS on MySQL 8.4, which has only that.
func (r *watermarkChunks) position() (Position, error) {
	var p Position
	stmts := []string{r.status}
	if r.status == "" {
		stmts = []string{"SHOW MASTER STATUS", "SHOW BINARY LOG STATUS"}
	}
	var err error
	for _, stmt := range stmts {
		var rs *mysql.Result
		if rs, err = r.conn.Execute(stmt); err != nil {
			var me *mysql.MyError
			if errors.As(err, &me) && me.Code == mysql.ER_PARSE_ERROR {
				continue
			}
			return p, fmt.Errorf("read the binlog position: %w", err)
		}
		r.status = stmt
		if rs.RowNumber() == 0 {
			return p, errors.New("the server reports no binlog position (log_bin=OFF?): chunks cannot be placed in the stream")
		}
		file, _ := rs.GetString(0, 0)
		pos, perr := rs.GetUint(0, 1)
		if perr != nil || file == "" {
			return p, fmt.Errorf("read the binlog position: %s answered no file and position", stmt)
		}
		p.Offset = pos
		p.File = strings.Clone(file)
		return p, nil
	}
	return p, fmt.Errorf("read the binlog position: %w", err)
}
