package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/binlogstream/binlogstream"
)

// The output file is the checkpoint: every line carries the resume token
// for the moment right after it. A process killed at any moment leaves
// complete lines followed by at most one partial line (what a write had
// got out). openOutput cuts the partial line and returns the last complete
// line's token, so a rerun continues exactly after it.

// recovered says what openOutput found in an existing file.
type recovered struct {
	// Resume is the token of the last complete line; zero for an empty file.
	Resume binlogstream.ResumePosition
	// Lines is false when the file held no complete line.
	Lines bool
	// Cut is how many bytes of an incomplete last line were removed.
	Cut int64
	// Size is the file's size after the cut.
	Size int64
	// Debezium: the last line is an envelope line of --format debezium;
	// Skip is its "skip" (see debezium.go).
	Debezium bool
	Skip     int
}

// openOutput opens (or creates) path for appending after recovering it.
// A new file gets mode 0600 (less if the umask says so): it holds row data.
func openOutput(path string) (*os.File, recovered, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, recovered{}, err
	}
	rec, err := recoverFile(f)
	if err == nil {
		_, err = f.Seek(rec.Size, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, recovered{}, outputError(path, err)
	}
	return f, rec, nil
}

// peekOutput is what openOutput would recover from path, read without
// changing the file (the cut of a partial last line included), so that a
// run refused for what the file holds leaves it as it was. A missing file
// is an empty one.
func peekOutput(path string) (recovered, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return recovered{}, nil
	}
	if err != nil {
		return recovered{}, err
	}
	defer f.Close()
	rec, err := recoverFile(readOnlyFile{f})
	if err != nil {
		return recovered{}, outputError(path, err)
	}
	return rec, nil
}

// readOnlyFile is a file recoverFile reads but does not cut: the cut is
// left to openOutput.
type readOnlyFile struct{ *os.File }

func (readOnlyFile) Truncate(int64) error { return nil }

// requireSchemaHistory refuses to resume out (it holds complete lines)
// without its schema history: the history gives each row its column names
// as of its binlog position, and one made up now (a new snapshot, or none
// offline) would write the rows after the resume point in another form
// than those before, silently. Every run that writes a line creates
// FILE.schema first (see createSchemaHistory), so a missing one was lost.
func requireSchemaHistory(out string) error {
	_, err := os.Stat(schemaPath(out))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return fmt.Errorf("%s has lines but its schema history %s is missing: the history gives the rows their column names "+
		"as of each line's binlog position, and one rebuilt now would write the rows after the resume point in another form "+
		"(other names, or positional arrays) than those before; restore %s as it was written with %s, "+
		"or move %s aside and start again (--start)", out, schemaPath(out), schemaPath(out), out, out)
}

// createSchemaHistory creates the empty schema history of an output that
// starts afresh, its name synced to disk where the file system allows,
// before the first line is written: an output with lines always has its
// FILE.schema (requireSchemaHistory).
func createSchemaHistory(out string) error {
	f, err := os.OpenFile(schemaPath(out), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Best effort, as FileSchemaStore does for its new file: a file
	// system that cannot sync a directory still gets the file.
	if d, err := os.Open(filepath.Dir(out)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// fileLike is what recoverFile needs of an *os.File.
type fileLike interface {
	io.ReaderAt
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
}

// recoverFile truncates f after its last newline and decodes the last
// complete line's resume token.
func recoverFile(f fileLike) (recovered, error) {
	st, err := f.Stat()
	if err != nil {
		return recovered{}, err
	}
	size := st.Size()
	end, err := lastIndexByte(f, size, '\n') // index of the last '\n', -1 if none
	if err != nil {
		return recovered{}, err
	}
	rec := recovered{Size: end + 1, Cut: size - (end + 1)}
	if rec.Cut > 0 {
		if err := f.Truncate(rec.Size); err != nil {
			return recovered{}, err
		}
	}
	if end < 0 {
		return rec, nil
	}
	start, err := lastIndexByte(f, end, '\n')
	if err != nil {
		return recovered{}, err
	}
	line := make([]byte, end-(start+1))
	if _, err := f.ReadAt(line, start+1); err != nil {
		return recovered{}, err
	}
	var v struct {
		Resume *string `json:"resume"`
		Type   *string `json:"type"` // every line of the lines format has one
		Skip   int     `json:"skip"`
	}
	if err := json.Unmarshal(line, &v); err != nil || v.Resume == nil {
		return recovered{}, badLastLine(f, start+1, fmt.Errorf("not a binlog-tail line with a \"resume\" token: %.80q", line))
	}
	r, err := binlogstream.ParseResumePosition(*v.Resume)
	if err == nil && r.IsZero() {
		err = fmt.Errorf("empty resume token")
	}
	if err != nil {
		return recovered{}, badLastLine(f, start+1, err)
	}
	rec.Resume, rec.Lines = r, true
	rec.Debezium, rec.Skip = v.Type == nil, v.Skip
	return rec, nil
}

// lastLineError is a last complete line that gives no resume token.
type lastLineError struct {
	line int64 // its number, from 1; 0 when it could not be counted
	at   int64 // its first byte's offset
	err  error
}

func (e *lastLineError) Error() string {
	if e.line == 0 {
		return fmt.Sprintf("the last line (at byte %d): %v", e.at, e.err)
	}
	return fmt.Sprintf("the last line, line %d (at byte %d): %v", e.line, e.at, e.err)
}

func (e *lastLineError) Unwrap() error { return e.err }

// badLastLine numbers the last line, which starts at offset at, by
// counting the lines before it: only on this error path is the whole file
// read.
func badLastLine(f io.ReaderAt, at int64, err error) error {
	n, cerr := countByte(f, at, '\n')
	if cerr != nil {
		return &lastLineError{at: at, err: err}
	}
	return &lastLineError{line: n + 1, at: at, err: err}
}

// countByte counts c in f[0:n].
func countByte(f io.ReaderAt, n int64, c byte) (int64, error) {
	buf := make([]byte, 1<<20)
	var count int64
	for off := int64(0); off < n; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		count += int64(bytes.Count(buf[:k], []byte{c}))
		off += int64(k)
		if err != nil && off < n {
			return 0, err
		}
	}
	return count, nil
}

// outputError names the output file in err and, for a bad last line,
// says how to keep the lines before it.
func outputError(path string, err error) error {
	var le *lastLineError
	if !errors.As(err, &le) {
		return fmt.Errorf("%s: %w", path, err)
	}
	keep := "the lines before it"
	if le.line > 0 {
		keep = fmt.Sprintf("lines 1 to %d", le.line-1)
	}
	return fmt.Errorf("%s: %w; to resume after %s, cut the file before it: truncate -s %d %s", path, err, keep, le.at, path)
}

// lastIndexByte returns the offset of the last c in f[0:n], or -1, reading
// backwards in chunks so a huge file costs only its tail.
func lastIndexByte(f io.ReaderAt, n int64, c byte) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for n > 0 {
		from := max(n-chunk, 0)
		b := buf[:n-from]
		if _, err := f.ReadAt(b, from); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, c); i >= 0 {
			return from + int64(i), nil
		}
		n = from
	}
	return -1, nil
}

// reservingWriter appends to the output file and reserves its disk blocks
// ahead of the writes (reserveBlocks: fallocate, the size unchanged), as
// many as this run wrote so far, 1 to 32 MiB at a time. A write into
// reserved blocks skips the file system's block reservation for each page
// it dirties, on ext4 a large part of a write call's CPU (BenchmarkTail
// shows it). release gives back the blocks reserved past the end of the
// file; a run that is killed leaves them reserved (not in the file: its
// size is what was written) until a later run's release.
type reservingWriter struct {
	f        *os.File
	reserve  func(f *os.File, off, n int64) error
	start    int64 // the file's size when the run began
	size     int64 // where the next write goes
	reserved int64 // blocks are reserved up to here
	off      bool  // a reservation failed: none is asked for again
}

func newReservingWriter(f *os.File, size int64, reserve func(*os.File, int64, int64) error) *reservingWriter {
	if reserve == nil {
		reserve = reserveBlocks
	}
	return &reservingWriter{f: f, reserve: reserve, start: size, size: size, reserved: size}
}

// Write writes p at the end of the file. A reservation that fails (a file
// system without fallocate, a disk too full for the next chunk) only
// stops the reserving: the writes report what matters.
func (w *reservingWriter) Write(p []byte) (int, error) {
	// While reserving, reserved is never behind size: it starts there and
	// each reservation reaches past the write that asked for it.
	if end := w.size + int64(len(p)); !w.off && end > w.reserved {
		n := max(min(max(w.size-w.start, minReserve), maxReserve), end-w.reserved)
		if err := w.reserve(w.f, w.reserved, n); err != nil {
			w.off = true
		} else {
			w.reserved += n
		}
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	return n, err
}

// release gives back the blocks reserved past the end of the file (a
// truncate to its size frees them), once its last write is done.
func (w *reservingWriter) release() error {
	if w.reserved <= w.size {
		return nil
	}
	st, err := w.f.Stat()
	if err == nil {
		err = w.f.Truncate(st.Size())
	}
	if err != nil {
		return fmt.Errorf("giving back the blocks reserved past the end: %w", err)
	}
	w.reserved = w.size
	return nil
}

const (
	minReserve = 1 << 20
	maxReserve = 32 << 20
)
