package binlogbuild_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

func newParser(f binlogbuild.Flavor) *replication.BinlogParser {
	p := replication.NewBinlogParser()
	p.SetFlavor(string(f))
	p.SetVerifyChecksum(true)
	return p
}

func seedRows() []binlogbuild.Row {
	row := func(id int64) binlogbuild.Row { return binlogbuild.Row{id, fmt.Sprintf("row-%d", id), int32(id % 7)} }
	rows := []binlogbuild.Row{row(1)}
	for id := int64(10); id < 20; id++ {
		rows = append(rows, row(id))
	}
	return append(rows, row(2))
}

func expectedRows(sc scenario) []binlogbuild.Row {
	if strings.HasSuffix(sc.name, "seed001") {
		return seedRows()
	}
	return sc.rows
}

// checkEvent compares one decoded event with the index entry it came from.
func checkEvent(t *testing.T, sc scenario, info binlogbuild.EventInfo, ev *replication.BinlogEvent, zeroLogPos bool) {
	t.Helper()
	require.Equal(t, info.Type, ev.Header.EventType, "%s %v", sc.name, info)
	require.Equal(t, info.End-info.Start, ev.Header.EventSize, "%v", info)
	if zeroLogPos && info.Type != replication.FORMAT_DESCRIPTION_EVENT {
		require.Zero(t, ev.Header.LogPos, "%v", info)
	} else {
		require.Equal(t, info.End, ev.Header.LogPos, "%v", info)
	}
	require.Equal(t, sc.bl.ServerID, ev.Header.ServerID)
	switch e := ev.Event.(type) {
	case *replication.FormatDescriptionEvent:
		want := replication.BINLOG_CHECKSUM_ALG_OFF
		if sc.bl.Checksum {
			want = replication.BINLOG_CHECKSUM_ALG_CRC32
		}
		require.Equal(t, want, e.ChecksumAlgorithm)
		require.Equal(t, sc.bl.Flavor == binlogbuild.MariaDB, strings.Contains(e.ServerVersion, "MariaDB"))
	case *replication.GenericEvent:
		t.Fatalf("%v decoded as a generic event", info)
	case *replication.GTIDEvent:
		if info.GTID != "" {
			next, err := e.GTIDNext()
			require.NoError(t, err)
			require.Equal(t, info.GTID, next.String())
		}
		var size uint64
		for _, o := range sc.bl.Events {
			if o.Group == info.Group {
				size += uint64(o.End - o.Start)
			}
		}
		require.Equal(t, size, e.TransactionLength, "%v", info)
	case *replication.MariadbGTIDEvent:
		require.Equal(t, info.GTID, e.GTID.String())
		require.Equal(t, strings.HasPrefix(info.Desc, "GTID "), e.IsStandalone(), info.Desc)
	case *replication.RotateEvent:
		require.EqualValues(t, 4, e.Position)
		require.Contains(t, info.Desc, string(e.NextLogName))
	case *replication.QueryEvent:
		require.Contains(t, info.Desc, string(e.Query))
	case *replication.RowsEvent:
		require.Equal(t, strings.Contains(info.Desc, "STMT_END_F"), e.Flags&binlogbuild.StmtEndFlag != 0, info.Desc)
	}
}

// TestParseEveryEvent feeds every event of every scenario to go-mysql's
// parser, as a dump from the start of each file would, with checksums
// verified, and checks positions and row values.
func TestParseEveryEvent(t *testing.T) {
	for _, f := range flavors {
		for _, sc := range scenarios(f) {
			t.Run(sc.name, func(t *testing.T) {
				zero := strings.HasSuffix(sc.name, "zerologpos")
				p := newParser(f)
				var got []binlogbuild.Row
				for _, info := range sc.bl.Events {
					file, ok := sc.bl.File(info.File)
					require.True(t, ok)
					if info.Start == 4 {
						require.Equal(t, binlogbuild.BinlogMagic, file.Data[:4])
					}
					ev, err := p.Parse(file.Data[info.Start:info.End])
					require.NoError(t, err, "%v", info)
					checkEvent(t, sc, info, ev, zero)
					if re, ok := ev.Event.(*replication.RowsEvent); ok {
						for _, r := range re.Rows {
							got = append(got, binlogbuild.Row(r))
						}
						require.Equal(t, []string{"id", tableOf(info.Desc)}, []string{re.Table.ColumnNameString()[0], string(re.Table.Table)})
					}
				}
				require.Equal(t, expectedRows(sc), got)
				// The index covers each file exactly.
				for _, file := range sc.bl.Files {
					end := uint32(4)
					for _, info := range sc.bl.Events {
						if info.File == file.Name {
							require.Equal(t, end, info.Start, "%v", info)
							end = info.End
						}
					}
					require.EqualValues(t, len(file.Data), end)
				}
			})
		}
	}
}

func tableOf(desc string) string {
	f := strings.Fields(desc) // "Write_rows app.users rows=2"
	return strings.SplitN(f[1], ".", 2)[1]
}

// TestParseFile reads every file with go-mysql's ParseFile.
func TestParseFile(t *testing.T) {
	for _, f := range flavors {
		for _, sc := range scenarios(f) {
			t.Run(sc.name, func(t *testing.T) {
				dir := t.TempDir()
				require.NoError(t, sc.bl.WriteDir(dir))
				zero := strings.HasSuffix(sc.name, "zerologpos")
				var got []binlogbuild.Row
				i := 0
				for _, file := range sc.bl.Files {
					p := newParser(f)
					err := p.ParseFile(filepath.Join(dir, file.Name), 0, func(ev *replication.BinlogEvent) error {
						info := sc.bl.Events[i]
						i++
						checkEvent(t, sc, info, ev, zero)
						if re, ok := ev.Event.(*replication.RowsEvent); ok {
							for _, r := range re.Rows {
								got = append(got, binlogbuild.Row(r))
							}
						}
						return nil
					})
					require.NoError(t, err)
				}
				require.Equal(t, len(sc.bl.Events), i)
				require.Equal(t, expectedRows(sc), got)
			})
		}
	}
}

// TestParseFileMidStatement: go-mysql's own file reader fails the same way
// from a position between a Table_map and its STMT_END_F.
func TestParseFileMidStatement(t *testing.T) {
	for _, f := range flavors {
		bl := binlogbuild.Seed001(f)
		dir := t.TempDir()
		require.NoError(t, bl.WriteDir(dir))
		after, ok := bl.Nth(binlogbuild.RowsEventType(f, binlogbuild.Insert, false), 4)
		require.True(t, ok)
		require.True(t, after.MidStatement)
		err := newParser(f).ParseFile(filepath.Join(dir, after.File), int64(after.End), func(*replication.BinlogEvent) error { return nil })
		require.ErrorContains(t, err, "table id 5131: invalid table id, no corresponding table map event")
	}
}

func TestChecksumIsVerified(t *testing.T) {
	bl := binlogbuild.Seed001(binlogbuild.MySQL)
	data := bytes.Clone(bl.Files[0].Data)
	p := newParser(binlogbuild.MySQL)
	fde := bl.Events[0]
	_, err := p.Parse(data[fde.Start:fde.End])
	require.NoError(t, err)
	xid, ok := bl.Nth(replication.XID_EVENT, 1)
	require.True(t, ok)
	data[xid.Start+20] ^= 0xff
	_, err = p.Parse(data[xid.Start:xid.End])
	require.ErrorContains(t, err, "checksum")
}

func TestHeartbeatEncoding(t *testing.T) {
	p := newParser(binlogbuild.MySQL)
	bl := binlogbuild.Seed001(binlogbuild.MySQL)
	_, err := p.Parse(bl.Files[0].Data[4:bl.Events[0].End])
	require.NoError(t, err)
	for _, tc := range []struct {
		typ  replication.EventType
		body []byte
	}{
		{replication.HEARTBEAT_EVENT, binlogbuild.HeartbeatBody("mysql-bin.000001")},
		{replication.HEARTBEAT_LOG_EVENT_V2, binlogbuild.HeartbeatV2Body("mysql-bin.000001", 1234)},
	} {
		raw := binlogbuild.EncodeEvent(binlogbuild.EventHeader{Type: tc.typ, ServerID: 1, LogPos: 1234, Flags: binlogbuild.FlagArtificial}, tc.body, true)
		ev, err := p.Parse(raw)
		require.NoError(t, err)
		hb, ok := ev.Event.(*replication.HeartbeatEvent)
		require.True(t, ok)
		assert.Equal(t, "mysql-bin.000001", hb.Filename)
		if tc.typ == replication.HEARTBEAT_LOG_EVENT_V2 {
			assert.EqualValues(t, 1234, hb.Offset)
		}
	}
}

func TestBinlogIndexHelpers(t *testing.T) {
	bl := binlogbuild.Seed001(binlogbuild.MySQL)
	var rows, mid int
	for _, e := range bl.Events {
		if binlogbuild.IsRowsEvent(e.Type) {
			rows++
		}
		if e.MidStatement {
			mid++
		}
	}
	// 1 + 5 + 1 Write_rows; positions after the Table_map and the first 4
	// Write_rows of the seed transaction are mid-statement (plus after each
	// single-event statement's Table_map).
	assert.Equal(t, 7, rows)
	assert.Equal(t, 3+4, mid)
	w4, ok := bl.Nth(replication.WRITE_ROWS_EVENTv2, 5) // 4th of the seed transaction
	require.True(t, ok)
	assert.True(t, w4.MidStatement)
	assert.Equal(t, 2, w4.Group)
	assert.Equal(t, binlogbuild.DefaultUUID+":2", w4.GTID)
	assert.Equal(t, binlogbuild.DefaultUUID+":1", bl.ExecutedBefore(w4.Index).String())
}

// TestOptionsShowInBinlog checks each builder option writes what it says.
func TestOptionsShowInBinlog(t *testing.T) {
	has := func(bl *binlogbuild.Binlog, typ replication.EventType) bool { _, ok := bl.Nth(typ, 1); return ok }
	build := func(f binlogbuild.Flavor, opts ...binlogbuild.Option) *binlogbuild.Binlog {
		b := binlogbuild.NewBuilder(f, opts...)
		richScript(b)
		return b.Build()
	}
	my := build(binlogbuild.MySQL)
	assert.True(t, has(my, replication.WRITE_ROWS_EVENTv2))
	assert.True(t, has(my, replication.UPDATE_ROWS_EVENTv2))
	assert.True(t, has(my, replication.DELETE_ROWS_EVENTv2))
	assert.True(t, has(my, replication.PREVIOUS_GTIDS_EVENT))
	assert.False(t, has(my, replication.ROWS_QUERY_EVENT))
	assert.True(t, has(build(binlogbuild.MySQL, binlogbuild.RowsQuery()), replication.ROWS_QUERY_EVENT))
	anon := build(binlogbuild.MySQL, binlogbuild.AnonymousGTID())
	assert.True(t, has(anon, replication.ANONYMOUS_GTID_EVENT))
	assert.False(t, has(anon, replication.GTID_EVENT))

	ma := build(binlogbuild.MariaDB)
	for _, typ := range []replication.EventType{replication.WRITE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv1,
		replication.DELETE_ROWS_EVENTv1, replication.MARIADB_GTID_LIST_EVENT, replication.MARIADB_BINLOG_CHECKPOINT_EVENT,
		replication.MARIADB_ANNOTATE_ROWS_EVENT, replication.MARIADB_GTID_EVENT} {
		assert.True(t, has(ma, typ), typ.String())
	}
	cm := build(binlogbuild.MariaDB, binlogbuild.CompressedRows())
	for typ := replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1; typ <= replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1; typ++ {
		assert.True(t, has(cm, typ), typ.String())
	}
	for _, e := range ma.Events {
		assert.NotEqual(t, "Query BEGIN", e.Desc, "MariaDB groups start with their GTID event")
	}
	// FirstGTID: the first file starts with the purged GTIDs.
	assert.Equal(t, binlogbuild.DefaultUUID+":1-99", build(binlogbuild.MySQL, binlogbuild.FirstGTID(100)).Files[0].StartGTIDs)
	assert.Equal(t, "0-1-99", build(binlogbuild.MariaDB, binlogbuild.FirstGTID(100)).Files[0].StartGTIDs)
	assert.Equal(t, []string{"mysql-bin.000001", "mysql-bin.000002", "mysql-bin.000003"}, fileNames(ma))
}

func fileNames(bl *binlogbuild.Binlog) []string {
	var names []string
	for _, f := range bl.Files {
		names = append(names, f.Name)
	}
	return names
}
