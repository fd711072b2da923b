package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/ddl"
)

// checkSchemaTail refuses an output whose FILE.schema ends in a cut
// record when FILE has the query line of a DDL statement the intact
// records do not hold. The store writes a DDL's record, fsynced, before
// its line can be written, so a crash while writing the record leaves
// no line of it, and the rerun reads the statement again and appends
// it. A line past a cut record means the record was lost after the fact
// (a copy or a restore taken while it was written): the rerun resumes
// after the statement, would never read it again, and would give the
// rows after it the schema from before it. Nothing is changed on
// refusal.
func checkSchemaTail(out string) error {
	hist, err := os.ReadFile(schemaPath(out))
	if err != nil || len(hist) == 0 || hist[len(hist)-1] == '\n' {
		return err
	}
	have := map[string]bool{}
	lines := bytes.Split(hist[:bytes.LastIndexByte(hist, '\n')+1], []byte("\n"))
	for _, l := range lines[1:] { // the header, then "CRC32HEX JSON" per record
		var rec binlogstream.SchemaRecord
		if len(l) > 9 && json.Unmarshal(l[9:], &rec) == nil && rec.Statement != "" {
			have[ddlKey(rec.GTID, rec.End)] = true
		}
	}
	f, err := os.Open(out)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		l, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			var long []byte
			for err == bufio.ErrBufferFull {
				long = append(long, l...)
				l, err = r.ReadSlice('\n')
			}
			l = append(long, l...)
		}
		if err == io.EOF {
			return nil // a partial last line is cut and written again
		}
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(l, []byte(`{"type":"query"`)) {
			continue
		}
		var q struct {
			Query, GTID, File string
			Pos               uint64
		}
		if json.Unmarshal(l, &q) != nil || !ddl.IsDDL([]byte(q.Query)) {
			continue
		}
		end := binlogstream.Position{File: q.File, Offset: q.Pos}
		if !have[ddlKey(q.GTID, end)] {
			return fmt.Errorf("%s ends in a cut record, and %s has lines past the DDL statement that record held "+
				"(%s at %s): the history cannot give the rows after it their schema, and the binlog will not be read "+
				"there again; restore %s as it was written with %s, or move both aside and start again (--start)",
				schemaPath(out), out, ddl.Truncate(q.Query), end, schemaPath(out), out)
		}
	}
}

// ddlKey identifies a DDL statement as the schema history does: by its
// GTID where it has one, else by its end position.
func ddlKey(gtid string, end binlogstream.Position) string {
	if gtid != "" {
		return "gtid:" + gtid
	}
	return "pos:" + end.String()
}
