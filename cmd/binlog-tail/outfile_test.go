package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
)

func tokenAt(off uint64) binlogstream.ResumePosition {
	return binlogstream.StartAt(binlogstream.Position{File: "bin.000001", Offset: off})
}

func lineWith(tok binlogstream.ResumePosition, pad int) string {
	return `{"type":"query","schema":"d","query":"` + strings.Repeat("x", pad) + `","file":"bin.000001","pos":1,"resume":"` + tok.String() + "\"}\n"
}

func TestRecoverFile(t *testing.T) {
	l1, l2 := lineWith(tokenAt(100), 3), lineWith(tokenAt(200), 5)
	// A last line longer than recoverFile's read chunk.
	long := lineWith(tokenAt(300), 200<<10)
	for _, tc := range []struct {
		name    string
		content string
		want    binlogstream.ResumePosition
		lines   bool
		size    int
		err     string
	}{
		{name: "empty", content: ""},
		{name: "only a partial line", content: l1[:10], size: 0},
		{name: "one line", content: l1, want: tokenAt(100), lines: true, size: len(l1)},
		{name: "two lines", content: l1 + l2, want: tokenAt(200), lines: true, size: len(l1 + l2)},
		{name: "cut last line", content: l1 + l2[:len(l2)-1], want: tokenAt(100), lines: true, size: len(l1)},
		{name: "cut right after newline", content: l1 + l2 + "{", want: tokenAt(200), lines: true, size: len(l1 + l2)},
		{name: "long last line", content: l1 + long, want: tokenAt(300), lines: true, size: len(l1 + long)},
		{name: "long cut line", content: l2 + long[:len(long)-2], want: tokenAt(200), lines: true, size: len(l2)},
		{name: "not JSON", content: "hello\n", err: "not a binlog-tail line"},
		{name: "no resume", content: `{"type":"query"}` + "\n", err: "not a binlog-tail line"},
		{name: "bad token", content: `{"resume":"bls1.AAAA"}` + "\n", err: "invalid resume token"},
		{name: "empty token", content: `{"resume":""}` + "\n", err: "empty resume token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			f, rec, err := openOutput(path)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, rec.Resume)
			assert.Equal(t, tc.lines, rec.Lines)
			assert.Equal(t, int64(tc.size), rec.Size)
			assert.Equal(t, int64(len(tc.content)-tc.size), rec.Cut)
			// The file is cut and positioned for appending.
			_, err = f.WriteString("next\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.content[:tc.size]+"next\n", string(got))
		})
	}
}

// TestOutputFileModeAndLock: a new output file is 0600 (the umask may take
// more away), and a second lock on it is refused at once, naming it.
func TestOutputFileModeAndLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	release, err := lockOutput(path)
	require.NoError(t, err)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, st.Mode().Perm()&^0o600, "mode %04o", st.Mode().Perm())
	require.NoError(t, os.Remove(path))
	f, _, err := openOutput(path)
	require.NoError(t, err)
	f.Close()
	st, err = os.Stat(path)
	require.NoError(t, err)
	assert.Zero(t, st.Mode().Perm()&^0o600, "mode %04o", st.Mode().Perm())
	require.NoError(t, os.Remove(path))
	release()

	release, err = lockOutput(path)
	require.NoError(t, err)
	_, err = lockOutput(path) // flock locks of two opens conflict within one process too
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+" is in use by another binlog-tail")
	release()
	release, err = lockOutput(path)
	require.NoError(t, err, "free again once released")
	release()
}

// allocated is the disk space f's blocks take.
func allocated(t *testing.T, f *os.File) int64 {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
	return st.Blocks * 512
}

// TestReservingWriter: the output's blocks are reserved ahead of its
// writes, in one run from where the file ended, each time as much as the
// run wrote so far within 1 and 32 MiB (or the one write that needs
// more); the file holds exactly what was written, bytes written to it
// directly too (the simulated crash's half line); release gives back what
// was reserved past the end. On Linux the reservations are real
// (fallocate).
func TestReservingWriter(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer f.Close()
	const earlier = "earlier run\n"
	_, err = f.Write([]byte(earlier))
	require.NoError(t, err)
	want, size := sha256.New(), int64(len(earlier)) // what the file must hold
	want.Write([]byte(earlier))

	type call struct{ off, n, size, end int64 }
	var calls []call
	var w *reservingWriter
	var p []byte // the write being made
	real := runtime.GOOS == "linux"
	w = newReservingWriter(f, size, func(f *os.File, off, n int64) error {
		calls = append(calls, call{off, n, w.size, w.size + int64(len(p))})
		err := reserveBlocks(f, off, n)
		if errors.Is(err, errors.ErrUnsupported) {
			real = false
			return nil
		}
		return err
	})
	writes := []int{1000, 3 << 20, 10}
	for range 72 << 4 { // 72 MiB: reservations of 32 MiB from 32 MiB on
		writes = append(writes, 64<<10)
	}
	for i, n := range writes {
		p = bytes.Repeat([]byte{byte('a' + i%26)}, n)
		_, err := w.Write(p)
		require.NoError(t, err)
		want.Write(p)
		size += int64(n)
		if real {
			assert.GreaterOrEqual(t, allocated(t, f), w.reserved, "write %d", i)
		}
	}
	require.NotEmpty(t, calls)
	next := int64(len(earlier))
	for i, c := range calls {
		assert.Equal(t, next, c.off, "reservation %d starts where the last one ended", i)
		assert.GreaterOrEqual(t, c.off+c.n, c.end, "reservation %d covers the write that asked for it", i)
		wrote := c.size - int64(len(earlier))
		assert.Equal(t, max(min(max(wrote, minReserve), maxReserve), c.end-c.off), c.n, "reservation %d", i)
		next = c.off + c.n
	}
	assert.Equal(t, int64(minReserve), calls[0].n)
	assert.Equal(t, calls[1].end-calls[1].off, calls[1].n, "the 3 MiB write, more than the chunk, is reserved to its end")
	assert.Equal(t, int64(maxReserve), calls[len(calls)-1].n, "at most 32 MiB at a time")

	// The crash path writes half a line past the writer.
	_, err = f.Write([]byte(`{"half`))
	require.NoError(t, err)
	want.Write([]byte(`{"half`))
	size += int64(len(`{"half`))
	require.NoError(t, w.release())
	require.NoError(t, w.release(), "a second release has nothing to do")
	got := sha256.New()
	_, err = f.Seek(0, io.SeekStart)
	require.NoError(t, err)
	n, err := io.Copy(got, f)
	require.NoError(t, err)
	require.Equal(t, size, n)
	require.Equal(t, want.Sum(nil), got.Sum(nil))
	if real {
		assert.Less(t, allocated(t, f), size+64<<10, "the blocks past the end are given back")
	}
}

// TestReservingWriterFailure: a reservation that fails (a disk too full
// for the next chunk) is not asked for again, and no write is lost.
func TestReservingWriterFailure(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer f.Close()
	calls := 0
	w := newReservingWriter(f, 0, func(*os.File, int64, int64) error { calls++; return syscall.ENOSPC })
	var want []byte
	for i := range 100 {
		p := bytes.Repeat([]byte{byte('a' + i%26)}, 50<<10)
		_, err := w.Write(p)
		require.NoError(t, err)
		want = append(want, p...)
	}
	require.NoError(t, w.release())
	assert.Equal(t, 1, calls)
	got, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got))
}

// A bad last line is refused with its line number and the cut that keeps
// the lines before it; after that cut the file resumes from the line
// before.
func TestRecoverFileBadLastLineSaysWhereToCut(t *testing.T) {
	l1, l2 := lineWith(tokenAt(100), 3), lineWith(tokenAt(200), 5)
	for _, last := range []string{"garbage\n", `{"resume":"bls1.AAAA"}` + "\n"} {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(l1+l2+last), 0o600))
		_, _, err := openOutput(path)
		require.Error(t, err)
		at := len(l1 + l2)
		assert.Contains(t, err.Error(), fmt.Sprintf("%s: the last line, line 3 (at byte %d): ", path, at))
		want := fmt.Sprintf("; to resume after lines 1 to 2, cut the file before it: truncate -s %d %s", at, path)
		assert.True(t, strings.HasSuffix(err.Error(), want), err.Error())

		require.NoError(t, os.Truncate(path, int64(at))) // what the message says to run
		f, rec, err := openOutput(path)
		require.NoError(t, err)
		assert.Equal(t, tokenAt(200), rec.Resume)
		require.NoError(t, f.Close())
	}
}
