package testhelpers

import (
	"context"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/internal/binlogbuild"
)

var (
	_ binlogstream.Source        = (*FakeSource)(nil)
	_ binlogstream.ReplaySkipper = (*FakeSource)(nil)
)

// FakeSource is a binlogbuild.FakeSource as a binlogstream.Source: its
// streams decode rows with binlogstream.DecodeRows, as the real sources
// do, and OpenFileReplay skips replayed rows with
// binlogstream.SkipReplayedRows, as a SyncerSource does on a resume.
type FakeSource struct{ *binlogbuild.FakeSource }

// NewFakeSource serves bl.
func NewFakeSource(bl *Binlog, opts ...SourceOption) *FakeSource {
	opts = append(opts[:len(opts):len(opts)], binlogbuild.DecodeRowsWith(binlogstream.DecodeRows))
	return &FakeSource{binlogbuild.NewFakeSource(bl, opts...)}
}

// OpenFile starts a dump at pos (COM_BINLOG_DUMP); see
// binlogbuild.FakeSource.OpenFile.
func (s *FakeSource) OpenFile(ctx context.Context, pos mysql.Position) (binlogstream.Stream, error) {
	return s.FakeSource.OpenFile(ctx, pos)
}

// OpenFileReplay is OpenFile with the rows of events up to streamed left
// undecoded (binlogstream.SkipReplayedRows), as a SyncerSource does on a
// resume; SkipReplayedRowsOff turns it off so tests can compare both.
func (s *FakeSource) OpenFileReplay(ctx context.Context, pos mysql.Position, streamed binlogstream.Position) (binlogstream.Stream, error) {
	return s.FakeSource.OpenFileReplay(ctx, pos, binlogstream.SkipReplayedRows(streamed))
}

// OpenGTID starts a dump after set (COM_BINLOG_DUMP_GTID /
// @slave_connect_state); see binlogbuild.FakeSource.OpenGTID.
func (s *FakeSource) OpenGTID(ctx context.Context, set mysql.GTIDSet) (binlogstream.Stream, error) {
	return s.FakeSource.OpenGTID(ctx, set)
}
