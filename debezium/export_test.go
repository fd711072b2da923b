package debezium

import "github.com/binlogstream/binlogstream"

// SetPending replaces how the encoder tells a snapshot's last read.
func (e *Encoder) SetPending(f func(binlogstream.ResumePosition) bool) { e.pending = f }
