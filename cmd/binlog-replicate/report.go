package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/tailline"
)

// report writes --verify-report: one JSON line per difference, as it is
// found (before its repair), then a summary line at the end of a
// verification.
//
// A file that an interrupted run left (its last line is not a summary)
// is continued: a line cut short is cut off, and a difference already in
// it is not written again (a run verifies from the start and finds the
// unrepaired ones again). A file that ends with a summary, or none,
// starts afresh.
type report struct {
	w       io.Writer
	f       *os.File // nil for stderr
	seen    map[string]bool
	carried int // difference lines kept from an interrupted run
	written int // difference lines written by this run
}

// diffLine is a difference's line.
type diffLine struct {
	Table   string          `json:"table"`
	Key     json.RawMessage `json:"key"`
	Diff    string          `json:"diff"`
	Columns []string        `json:"columns,omitempty"`
	At      string          `json:"at"`
}

// summaryLine ends a verification's report.
type summaryLine struct {
	Summary     bool  `json:"summary"`
	Tables      int   `json:"tables"`
	Chunks      int   `json:"chunks"`
	Rows        int64 `json:"rows"`
	Differences int   `json:"differences"`
	Repaired    int   `json:"repaired"`
	Unsettled   int   `json:"unsettled"`
	Rereads     int   `json:"rereads"`
	// LongestReadMS is the longest source chunk read's transaction.
	LongestReadMS int64 `json:"longest_read_ms"`
}

// openReport opens path for the report; stderr when path is "".
func openReport(path string, stderr io.Writer) (*report, error) {
	r := &report{w: stderr, seen: map[string]bool{}}
	if path == "" {
		return r, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--verify-report: %w", err)
	}
	keep, err := r.load(f, path)
	if err == nil {
		err = f.Truncate(keep)
	}
	if err == nil {
		_, err = f.Seek(keep, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--verify-report: %w", err)
	}
	r.w, r.f = f, f
	return r, nil
}

// load reads what an interrupted run wrote to f and returns the length
// to keep: every whole line of an interrupted run, 0 for a finished one.
func (r *report) load(f *os.File, path string) (int64, error) {
	br := bufio.NewReader(f)
	var keep int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return keep, nil // a last line cut short is dropped
		}
		if err != nil {
			return 0, err
		}
		var l struct {
			diffLine
			Summary bool `json:"summary"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return 0, fmt.Errorf("%s line %d is not a report line (%v): move the file away or give another", path, n, err)
		}
		if l.Summary {
			clear(r.seen)
			r.carried = 0
			keep = 0 // a finished report: start afresh
			continue
		}
		r.seen[l.Table+"\x00"+string(l.Key)+"\x00"+l.Diff] = true
		r.carried++
		keep += int64(len(line))
	}
}

// differences writes the lines of diffs not written yet, and syncs the
// file before a repair commits.
func (r *report) differences(diffs []binlogstream.VerifyDifference) error {
	var buf bytes.Buffer
	for _, d := range diffs {
		key := []byte{'{'}
		for j, c := range d.KeyColumns {
			if j > 0 {
				key = append(key, ',')
			}
			name, _ := json.Marshal(c)
			key = append(append(key, name...), ':')
			key = tailline.AppendValue(key, d.Key[j])
		}
		key = append(key, '}')
		id := d.Table + "\x00" + string(key) + "\x00" + string(d.Kind)
		if r.seen[id] {
			continue
		}
		r.seen[id] = true
		b, err := json.Marshal(diffLine{Table: d.Table, Key: key, Diff: string(d.Kind), Columns: d.Columns, At: d.At.String()})
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
		r.written++
	}
	return r.flush(buf.Bytes())
}

// summary writes the summary line.
func (r *report) summary(s summaryLine) error {
	s.Summary = true
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return r.flush(append(b, '\n'))
}

func (r *report) flush(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := r.w.Write(b); err != nil {
		return fmt.Errorf("--verify-report: %w", err)
	}
	if r.f != nil {
		if err := r.f.Sync(); err != nil {
			return fmt.Errorf("--verify-report: %w", err)
		}
	}
	return nil
}

func (r *report) close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}
