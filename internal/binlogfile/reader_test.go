package binlogfile_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/internal/binlogfile"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

var (
	errCorrupt  = errors.New("corrupt")
	errNotInDir = errors.New("not in dir")
)

// fileError is what the test's Faults.File makes.
type fileError struct {
	path string
	off  uint64
	err  error
}

func (e *fileError) Error() string { return fmt.Sprintf("%s@%d: %v", e.path, e.off, e.err) }
func (e *fileError) Unwrap() error { return e.err }

var faults = &binlogfile.Faults{Corrupt: errCorrupt, NotInDir: errNotInDir,
	File: func(path string, off uint64, err error) error { return &fileError{path, off, err} }}

// writeBinlog writes a file of two transactions and returns its path and
// bytes.
func writeBinlog(t *testing.T, fl th.Flavor) (string, []byte) {
	tbl := th.Table{ID: 7, Schema: "app", Name: "t", Columns: []th.Column{{Name: "id", Type: th.Int}}}
	bl := th.NewBuilder(fl).
		Txn(func(x *th.Txn) { x.Insert(tbl, th.Row{int32(1)}, th.Row{int32(2)}) }).
		Txn(func(x *th.Txn) { x.Insert(tbl, th.Row{int32(3)}) }).Build()
	path := filepath.Join(t.TempDir(), bl.Files[0].Name)
	require.NoError(t, os.WriteFile(path, bl.Files[0].Data, 0o644))
	return path, bl.Files[0].Data
}

// TestReaderEvents: the head, then every event with its checksum checked,
// io.EOF at the end; a file cut inside an event is ErrNotYet until the
// rest is written; a damaged byte is a Corrupt error at the event's
// offset.
func TestReaderEvents(t *testing.T) {
	for _, fl := range []th.Flavor{th.MySQL, th.MariaDB} {
		path, data := writeBinlog(t, fl)
		h, err := binlogfile.ReadHead(path, string(fl), faults)
		require.NoError(t, err)
		require.True(t, h.CRC)
		require.NotNil(t, h.State, "the file's GTID state")

		f, err := os.Open(path)
		require.NoError(t, err)
		r := binlogfile.NewReader(f, path, faults)
		_, err = r.Head()
		require.NoError(t, err)
		p := replication.NewBinlogParser()
		_, err = binlogfile.ParseEvent(p, h.FDERaw, errCorrupt)
		require.NoError(t, err)
		n := 0
		for {
			off := r.Off()
			raw, err := r.Next(h.CRC)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			require.Equal(t, off+uint64(len(raw)), r.Off())
			_, err = binlogfile.ParseEvent(p, raw, errCorrupt)
			require.NoError(t, err)
			n++
		}
		require.Greater(t, n, 4)
		require.Equal(t, uint64(len(data)), r.Off())
		require.NoError(t, r.Close())

		// Cut inside the last event: not yet; whole again: read.
		require.NoError(t, os.WriteFile(path, data[:len(data)-3], 0o644))
		f, err = os.Open(path)
		require.NoError(t, err)
		r = binlogfile.NewReader(f, path, faults)
		_, err = r.Head()
		require.NoError(t, err)
		var last uint64
		for {
			last = r.Off()
			if _, err = r.Next(h.CRC); err != nil {
				break
			}
		}
		require.ErrorIs(t, err, binlogfile.ErrNotYet)
		require.Equal(t, last, r.Off(), "rewound to the event's start")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		_, err = r.Next(h.CRC)
		require.NoError(t, err)
		require.NoError(t, r.Close())

		// A damaged byte in the last event's body: its checksum.
		bad := append([]byte(nil), data...)
		bad[len(bad)-6] ^= 0xff
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		f, err = os.Open(path)
		require.NoError(t, err)
		r = binlogfile.NewReader(f, path, faults)
		_, err = r.Head()
		require.NoError(t, err)
		for {
			last = r.Off()
			if _, err = r.Next(h.CRC); err != nil {
				break
			}
		}
		require.ErrorIs(t, err, errCorrupt)
		var fe *fileError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, path, fe.path)
		require.Equal(t, last, fe.off)
		require.ErrorContains(t, err, "checksum mismatch")
		require.NoError(t, r.Close())
	}
}

// TestReadHeadMissing: a missing file is NotInDir, in a file error.
func TestReadHeadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mysql-bin.000009")
	_, err := binlogfile.ReadHead(path, "", faults)
	require.ErrorIs(t, err, errNotInDir)
	require.ErrorContains(t, err, "no such file") // the cause as text (%v), not in the chain
	var fe *fileError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, path, fe.path)
}

// TestEncodeFakeRotate: the Rotate a dump starts with parses to the file
// and offset, flagged artificial, with or without a checksum.
func TestEncodeFakeRotate(t *testing.T) {
	for _, crc := range []bool{false, true} {
		raw := binlogfile.EncodeFakeRotate("mysql-bin.000002", 120, crc)
		p := replication.NewBinlogParser()
		if crc {
			fde := th.EncodeEvent(th.EventHeader{Type: replication.FORMAT_DESCRIPTION_EVENT, ServerID: 1},
				th.FormatDescriptionBody(th.MySQL, 0, true), true)
			_, err := binlogfile.ParseEvent(p, fde, errCorrupt)
			require.NoError(t, err)
		}
		ev, err := binlogfile.ParseEvent(p, raw, errCorrupt)
		require.NoError(t, err)
		re := ev.Event.(*replication.RotateEvent)
		require.Equal(t, "mysql-bin.000002", string(re.NextLogName))
		require.Equal(t, uint64(120), re.Position)
		require.NotZero(t, ev.Header.Flags&replication.LOG_EVENT_ARTIFICIAL_F)
		require.Zero(t, ev.Header.LogPos)
	}
}
