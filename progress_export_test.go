package binlogstream

import "time"

// SetProgressClock replaces the clock behind Config.ProgressInterval, so a
// test decides when a Progress is due.
func SetProgressClock(s *BinlogStreamer, now func() time.Time) { s.progress.now = now }
