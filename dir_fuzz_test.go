package binlogstream_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

// FuzzDirSourceGarbage overwrites part of a checksum-less binlog file
// (nothing can tell such damage from data) and streams it to the end:
// the stream ends with events or an error, never a panic or a hang.
func FuzzDirSourceGarbage(f *testing.F) {
	f.Add(uint16(200), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(uint16(300), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0x13})
	f.Add(uint16(120), []byte("\x1e\x00\x00\x00"))
	for _, fl := range []th.Flavor{th.MySQL, th.MariaDB} {
		bl := th.NewBuilder(fl, th.Checksum(false), th.MaxRowsPerEvent(2)).
			Txn(func(t *th.Txn) { t.Insert(orders, orderRows(1, 4)...) }).
			Txn(func(t *th.Txn) { t.Update(users, userRows(1, 1)[0], userRows(5, 1)[0]) }).Build()
		f.Add(uint16(len(bl.Files[0].Data)-40), []byte{7, 7, 7})
	}
	f.Fuzz(func(t *testing.T, at uint16, patch []byte) {
		for _, fl := range []th.Flavor{th.MySQL, th.MariaDB} {
			bl := th.NewBuilder(fl, th.Checksum(false), th.MaxRowsPerEvent(2)).
				Txn(func(t *th.Txn) { t.Insert(orders, orderRows(1, 4)...) }).
				Txn(func(t *th.Txn) { t.Update(users, userRows(1, 1)[0], userRows(5, 1)[0]) }).Build()
			data := append([]byte(nil), bl.Files[0].Data...)
			fdeEnd := 4 + int(data[4+9]) + int(data[4+10])<<8
			off := fdeEnd + int(at)%(len(data)-fdeEnd)
			copy(data[off:], patch)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, bl.Files[0].Name), data, 0o644))
			src, err := binlogstream.NewDirSource(binlogstream.DirConfig{Dir: dir, PollInterval: time.Millisecond})
			require.NoError(t, err)
			s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{Source: src,
				Start: binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4})})
			require.NoError(t, err)
			s.AddListener(func(context.Context, binlogstream.Event) error { return nil })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, err := s.StopAtCurrent(ctx); err == nil {
				err = s.Run(ctx)
				require.NotErrorIs(t, err, context.DeadlineExceeded, "stopped at the end of the files")
			}
			cancel()
			require.NoError(t, s.Close())
		}
	})
}
