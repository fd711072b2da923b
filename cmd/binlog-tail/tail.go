package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream"
)

// tailConfig is everything the streaming core needs; the CLI and the demo
// fill it from different sources.
type tailConfig struct {
	Source binlogstream.Source
	// Start is used when the output file holds no complete line.
	Start binlogstream.ResumePosition
	// Target, when set, stops the run once an event ending at or after it
	// has been written (--stop-at-current, file mode).
	Target binlogstream.Position
	// TargetGTID, when set, stops the run once every transaction in it
	// has been written (--stop-at-current --gtid).
	TargetGTID string
	// Failover, when set, moves a GTID-mode stream to a validated writer
	// when its server stays unreachable (--failover-to).
	Failover *binlogstream.FailoverConfig

	MaxReconnectAttempts int
	ReconnectBackoff     time.Duration
	Logger               logrus.FieldLogger

	// Progress receives a status line about once every ProgressEvery;
	// nil for none.
	Progress      io.Writer
	ProgressEvery time.Duration
	// FlushEvery bounds how long a written line may sit in the buffer.
	FlushEvery time.Duration

	// crashBefore, when set, is asked before each row line is written; true
	// simulates SIGKILL there: the buffer goes out, then only half of that
	// line, and the run ends with errCrashed. The demo uses it.
	crashBefore func(ev *binlogstream.Event, row int) bool
}

var errCrashed = errors.New("simulated crash")

// tailResult reports what a run did.
type tailResult struct {
	Recovered recovered
	From      binlogstream.ResumePosition // where the streamer started
	Lines     uint64                      // lines written by this run
	Reached   bool                        // Target was reached
	Stats     binlogstream.Stats
}

// tailer writes the lines of delivered events to the output file.
type tailer struct {
	cfg    tailConfig
	target binlogstream.Position
	stop   context.CancelFunc

	mu      sync.Mutex // guards w against the periodic flush
	w       *bufio.Writer
	f       *os.File
	line    []byte
	lines   atomic.Uint64
	rows    atomic.Uint64
	reached bool
}

// tail recovers the output file at path, then streams from the token of its
// last line (or cfg.Start) until ctx is done, Target is reached, or an error.
// A cancelled ctx is a clean stop: the result's error is nil.
func tail(ctx context.Context, path string, cfg tailConfig) (res tailResult, err error) {
	f, rec, err := openOutput(path)
	if err != nil {
		return res, err
	}
	res.Recovered = rec
	from := cfg.Start
	if rec.Lines {
		from = rec.Resume
	}
	res.From = from
	if from.IsZero() {
		f.Close()
		return res, errors.New("no start position")
	}
	t := &tailer{cfg: cfg, target: cfg.Target, f: f, w: bufio.NewWriterSize(f, 64<<10)}
	defer func() {
		t.mu.Lock()
		ferr := t.w.Flush()
		t.mu.Unlock()
		if ferr == nil {
			ferr = f.Sync()
		}
		if cerr := f.Close(); ferr == nil {
			ferr = cerr
		}
		if err == nil && ferr != nil {
			err = fmt.Errorf("writing %s: %w", path, ferr)
		}
		res.Lines = t.lines.Load()
	}()

	if !t.target.IsZero() && from.Rows == 0 && from.Streamed.Compare(t.target) >= 0 {
		res.Reached = true
		return res, nil // nothing to do
	}

	s, err := binlogstream.NewBinlogStreamer(binlogstream.Config{
		Source:               cfg.Source,
		Start:                from,
		MaxReconnectAttempts: cfg.MaxReconnectAttempts,
		ReconnectBackoff:     cfg.ReconnectBackoff,
		Failover:             cfg.Failover,
		Logger:               cfg.Logger,
	})
	if err != nil {
		return res, err
	}
	if cfg.TargetGTID != "" {
		// Run returns nil once it is delivered (at once if it already is).
		if err := s.StopAtGTID(cfg.TargetGTID); err != nil {
			return res, err
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	t.stop = stop
	s.AddListener(t.onEvent)

	bg := t.background(runCtx, s)
	err = s.Run(runCtx)
	stop()
	bg.Wait()
	res.Stats = s.Stats()
	res.Reached = t.reached || (err == nil && cfg.TargetGTID != "")
	if res.Reached || (ctx.Err() != nil && errors.Is(err, ctx.Err())) {
		return res, nil
	}
	if errors.Is(err, errCrashed) {
		return res, errCrashed
	}
	return res, err
}

// background flushes the buffer every FlushEvery (so the file trails an
// idle stream by at most that) and prints progress.
func (t *tailer) background(ctx context.Context, s *binlogstream.BinlogStreamer) *sync.WaitGroup {
	var wg sync.WaitGroup
	flushEvery := t.cfg.FlushEvery
	if flushEvery <= 0 {
		flushEvery = 200 * time.Millisecond
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(flushEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				t.mu.Lock()
				var err error
				if t.w.Buffered() > 0 {
					err = t.w.Flush()
				}
				t.mu.Unlock()
				if err != nil {
					return // the next write fails and stops the run
				}
			}
		}
	}()
	if t.cfg.Progress != nil {
		every := t.cfg.ProgressEvery
		if every <= 0 {
			every = time.Second
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			last, lastAt := t.rows.Load(), time.Now()
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					st := s.Stats()
					rows := t.rows.Load()
					rate := float64(rows-last) / now.Sub(lastAt).Seconds()
					last, lastAt = rows, now
					fmt.Fprintf(t.cfg.Progress, "binlog-tail: at %s, %d rows (%.0f rows/s), lag %s\n",
						describe(st.Position), rows, rate, st.Lag.Truncate(time.Millisecond))
				}
			}
		}()
	}
	return &wg
}

// describe renders a position for the progress line: the last streamed
// file position, or in GTID mode the executed set and the transaction in
// flight.
func describe(p binlogstream.ResumePosition) string {
	if !p.IsGTID() {
		return p.Streamed.String()
	}
	s := "gtid " + p.Executed
	if p.Executed == "" {
		s = "gtid (none)"
	}
	if p.GTID != "" {
		s += " + inside " + p.GTID
	}
	return s
}

// onEvent is the streamer's listener: it writes the event's lines.
func (t *tailer) onEvent(_ context.Context, ev *binlogstream.Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e := ev.Event.(type) {
	case *replication.RowsEvent:
		kind := rowKind(ev.Header.EventType)
		if kind == "" {
			break
		}
		per := 1
		if kind == "update" {
			per = 2
		}
		n := len(e.Rows) / per
		for i := 0; i < n; i++ {
			var before, after []any
			if per == 2 {
				before, after = e.Rows[2*i], e.Rows[2*i+1]
			} else {
				after = e.Rows[i]
			}
			t.line = appendRowLine(t.line[:0], kind, e, before, after, ev, ev.ResumeAfterRows(i+1))
			if t.cfg.crashBefore != nil && t.cfg.crashBefore(ev, i) {
				return t.crash()
			}
			if _, err := t.w.Write(t.line); err != nil {
				return err
			}
			t.lines.Add(1)
			t.rows.Add(1)
		}
	case *replication.QueryEvent:
		if isTxnMarker(e.Query) {
			break
		}
		t.line = appendQueryLine(t.line[:0], e, ev)
		if _, err := t.w.Write(t.line); err != nil {
			return err
		}
		t.lines.Add(1)
	}
	if !t.target.IsZero() && ev.End.Compare(t.target) >= 0 {
		t.reached = true
		t.stop()
	}
	return nil
}

// crash writes what a process killed in the middle of writing t.line would
// leave behind: every earlier line, then half of this one.
func (t *tailer) crash() error {
	if err := t.w.Flush(); err != nil {
		return err
	}
	if _, err := t.f.Write(t.line[:len(t.line)/2]); err != nil {
		return err
	}
	t.w.Reset(io.Discard) // nothing more reaches the file
	return errCrashed
}
