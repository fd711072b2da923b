package rows

import (
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"
)

// ErrCorrupt is matched by the errors of rows events whose bytes cannot
// be what their Table_map says (the root package's ErrCorruptEvent).
var ErrCorrupt = errors.New("binlogstream: corrupt binlog event")

// Header reads a rows event's header as go-mysql's DecodeHeader does and
// returns where its rows start; it refuses an event checkImages refuses.
func Header(re *replication.RowsEvent, data []byte) (int, error) {
	pos, err := re.DecodeHeader(data)
	if err != nil {
		return pos, err
	}
	return pos, checkImages(re, pos, data)
}

// Job is the decoding of one rows event's rows, its header read: what
// Run needs, made on go-mysql's parsing goroutine (PlanCache.Job), and
// the arena of the rows once Run decoded them into one.
type Job struct {
	re       *replication.RowsEvent
	fast     bool       // this package's decoder applies to the parser's settings
	plan     *tablePlan // nil: a column of the table is left to go-mysql's decoder
	settings rowsSettings
	pos      int
	data     []byte
	Arena    *Arena // with recycle: the memory of the decoded rows
}

// Job returns the job of re's rows, data[pos:], with the plan of its
// table. It runs on go-mysql's parsing goroutine, as the cache.
func (c *PlanCache) Job(re *replication.RowsEvent, pos int, data []byte) Job {
	j := Job{re: re, pos: pos, data: data}
	if j.settings, j.fast = fastSettings(re); j.fast {
		j.plan = c.plan(re)
	}
	return j
}

// Run decodes the job's rows: with this package's decoder when it applies
// (decode.go), into an arena when recycle is set, else with go-mysql's;
// fast says which. An error is a COMPRESSED column's value that does not
// read (go-mysql does not know those columns) or go-mysql's error.
func (j *Job) Run(recycle bool) (fast bool, err error) {
	if j.fast {
		if recycle {
			j.Arena = NewArena()
		}
		ok, err := decodeRowsFast(j.re, j.plan, j.settings, j.pos, j.data, j.Arena)
		if ok {
			return true, nil
		}
		if err == nil && j.plan != nil && j.plan.compressed {
			err = fmt.Errorf("%w: rows of %s, which has a COMPRESSED column, do not decode", ErrCorrupt, tableName(j.re))
		}
		if j.Arena != nil { // go-mysql decodes, or nothing does: its values are its own
			j.Arena.Release(j.Arena.Gen())
			j.Arena = nil
		}
		if err != nil {
			return false, err
		}
	}
	return false, j.re.DecodeData(j.pos, j.data)
}

// checkImages refuses a rows event whose row images take no bytes (no
// column in them) while row data follows: go-mysql's DecodeData loops for
// ever on one, appending empty rows. No server writes one; damaged bytes
// can (FuzzDirSourceGarbage makes them).
func checkImages(re *replication.RowsEvent, pos int, data []byte) error {
	if pos < len(data) && !anyBitSet(re.ColumnBitmap1, int(re.ColumnCount)) {
		return fmt.Errorf("%w: a rows event of %s with %d bytes of rows but no column in its images",
			ErrCorrupt, tableName(re), len(data)-pos)
	}
	return nil
}

func anyBitSet(bitmap []byte, n int) bool {
	for i := 0; i < n && i/8 < len(bitmap); i++ {
		if bitmap[i/8]&(1<<(i%8)) != 0 {
			return true
		}
	}
	return false
}

func tableName(re *replication.RowsEvent) string {
	if re.Table == nil {
		return "?.?"
	}
	return string(re.Table.Schema) + "." + string(re.Table.Table)
}
