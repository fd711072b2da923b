package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
	th "github.com/binlogstream/binlogstream/testhelpers"
)

func fakeConfig(t *testing.T) tailConfig {
	t.Helper()
	srv, err := newFakeDemoServer()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return tailConfig{Source: srv.Source(), Start: binlogstream.StartAt(srv.First), Target: srv.End,
		ReconnectBackoff: time.Millisecond}
}

func reference(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ref.jsonl")
	res, err := tail(context.Background(), path, fakeConfig(t))
	require.NoError(t, err)
	require.True(t, res.Reached)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 32, bytes.Count(want, []byte("\n")), "25 row and statement lines, 7 table lines")
	return want
}

// TestKillAtEveryByte: a SIGKILL leaves a prefix of what an uninterrupted
// run writes. Resuming from every prefix (every line boundary, and inside
// every line) gives the uninterrupted file.
func TestKillAtEveryByte(t *testing.T) {
	want := reference(t)
	dir := t.TempDir()
	var cuts []int
	start := 0
	for i, c := range want {
		if c == '\n' {
			cuts = append(cuts, start, start+1, (start+i)/2, i, i+1)
			start = i + 1
		}
	}
	for _, cut := range cuts {
		path := filepath.Join(dir, "out.jsonl")
		require.NoError(t, os.WriteFile(path, want[:cut], 0o644))
		_, err := tail(context.Background(), path, fakeConfig(t))
		require.NoError(t, err, "cut at %d", cut)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "killed after %d bytes", cut)
	}
}

// TestCrashBetweenEveryRow crashes the run before every row line (the
// demo's seam: buffer out, half a line) and resumes, twice in a row.
func TestCrashBetweenEveryRow(t *testing.T) {
	want := reference(t)
	for k := 0; ; k++ {
		path := filepath.Join(t.TempDir(), "out.jsonl")
		cfg := fakeConfig(t)
		n := 0
		cfg.crashBefore = func(binlogstream.Event, int) bool { n++; return n > k }
		_, err := tail(context.Background(), path, cfg)
		if err == nil {
			require.Greater(t, k, 15, "the run has rows")
			break
		}
		require.ErrorIs(t, err, errCrashed)
		// Crash the resumed run too, right at its first row.
		cfg = fakeConfig(t)
		cfg.crashBefore = func(binlogstream.Event, int) bool { return true }
		_, err = tail(context.Background(), path, cfg)
		require.ErrorIs(t, err, errCrashed)
		_, err = tail(context.Background(), path, fakeConfig(t))
		require.NoError(t, err)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "crash before row line %d", k+1)
	}
}

// TestStopAtTargetAndSignal: nothing to do exits at once; a cancelled
// context is a clean stop with every line of acknowledged events written.
func TestStopAtTargetAndSignal(t *testing.T) {
	want := reference(t)
	path := filepath.Join(t.TempDir(), "out.jsonl")
	require.NoError(t, os.WriteFile(path, want, 0o644))
	res, err := tail(context.Background(), path, fakeConfig(t))
	require.NoError(t, err)
	assert.True(t, res.Reached)
	assert.Zero(t, res.Lines)

	// No target: the fake source blocks at the end like an idle server
	// until the context ends (SIGTERM).
	path = filepath.Join(t.TempDir(), "out.jsonl")
	cfg := fakeConfig(t)
	cfg.Target = binlogstream.Position{}
	cfg.FlushEvery = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := tail(ctx, path, cfg); done <- err }()
	require.Eventually(t, func() bool {
		got, _ := os.ReadFile(path)
		return bytes.Equal(got, want) // flushed while idle, before exit
	}, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

func TestDemo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, runDemo(context.Background(), &out, newFakeDemoServer))
	s := out.String()
	assert.Contains(t, s, "invalid table id, no corresponding table map event")
	assert.Contains(t, s, "byte for byte")
	assert.Contains(t, s, "dropped 4 replayed events")

	var stderr bytes.Buffer
	assert.Equal(t, 0, cli(context.Background(), []string{"--demo"}, &out, &stderr), stderr.String())
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--out", "x"}, 2, "binlog-tail: missing --dsn DSN or --binlog-dir DIR\n"},
		{[]string{"--dsn", "u:secret@tcp(127.0.0.1:1)/"}, 2, "binlog-tail: missing --out FILE\n"},
		{nil, 2, "binlog-tail: missing --out FILE, and --dsn DSN or --binlog-dir DIR\n"},
		{[]string{"--bogus"}, 2, "binlog-tail: flag provided but not defined: -bogus\n"},
		{[]string{"--dsn", "u:secret@nohost", "--out", "x"}, 2, "tcp(HOST:PORT)"},
		{[]string{"--dsn", "u:secret@tcp(127.0.0.1:1)/", "--out", "x", "--start", "bogus"}, 2, "--start"},
		{[]string{"--dsn", "u:secret@tcp(127.0.0.1:1)/", "--out", "x", "--flavor", "pg"}, 2, "--flavor"},
		{[]string{"--dsn", "u:secret@tcp(127.0.0.1:1)/", "--out", "x", "--server-id", "0"}, 2, "--server-id"},
	} {
		var stdout, stderr bytes.Buffer
		code := cli(context.Background(), tc.args, &stdout, &stderr)
		assert.Equal(t, tc.code, code, "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.msg)
		assert.NotContains(t, stderr.String(), "secret")
		// The cause, then where the flags are described: not the help.
		assert.Equal(t, 2, bytes.Count(stderr.Bytes(), []byte("\n")), stderr.String())
		assert.True(t, strings.HasSuffix(stderr.String(), "\nRun 'binlog-tail --help' for the flags.\n"), stderr.String())
	}

	// --help: the synopsis first, --password-file optional, every flag's
	// argument named; --version one line.
	var stdout, help bytes.Buffer
	assert.Equal(t, 0, cli(context.Background(), []string{"--help"}, &stdout, &help))
	assert.True(t, strings.HasPrefix(help.String(), "usage: binlog-tail --dsn DSN --out FILE [--password-file FILE] [flags]\n"), help.String())
	assert.Empty(t, clikit.CheckPlaceholders(newFlagSet(new(options), new(rawFlags), io.Discard)))
	help.Reset()
	assert.Equal(t, 0, cli(context.Background(), []string{"--version"}, &stdout, &help))
	assert.True(t, strings.HasPrefix(help.String(), "binlog-tail "), help.String())
	assert.Equal(t, 1, strings.Count(help.String(), "\n"))
	// Nothing listens on port 1: one line, exit 1, no password.
	var stderr bytes.Buffer
	stdout.Reset()
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code := cli(context.Background(), []string{"--dsn", "u:secret@tcp(127.0.0.1:1)/", "--out", out, "--quiet"}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "binlog-tail: connect to u:xxxxx@tcp(127.0.0.1:1)/")
	assert.NotContains(t, stderr.String(), "secret")
	assert.Equal(t, 1, bytes.Count(stderr.Bytes(), []byte("\n")), stderr.String())
}

// TestCompressedTransactionsToTheTarget: with MySQL's binlog compression
// every row of every Transaction_payload is written, the last one's too
// (its inner events all end where the payload ends).
func TestCompressedTransactionsToTheTarget(t *testing.T) {
	bl, err := th.CompressTransactions(th.Seed001(th.MySQL))
	require.NoError(t, err)
	last := bl.Files[len(bl.Files)-1]
	path := filepath.Join(t.TempDir(), "out.jsonl")
	res, err := tail(context.Background(), path, tailConfig{Source: th.NewFakeSource(bl),
		Start:  binlogstream.StartAt(binlogstream.Position{File: bl.Files[0].Name, Offset: 4}),
		Target: binlogstream.Position{File: last.Name, Offset: uint64(len(last.Data))}, ReconnectBackoff: time.Millisecond})
	require.NoError(t, err)
	require.True(t, res.Reached)
	out, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 12, bytes.Count(out, []byte(`"type":"insert"`)), "1 + 10 + 1 rows")
}

// TestWriteback: the writer asks for a writeback once every
// writebackEvery bytes (not when one is still running), every
// flushEvery-th of them a flush; the file is the same with or without
// them; a writeback, flush or block reservation that is not available is
// not asked for again (the run succeeds: the fsync at the end does it
// all); the blocks reserved past the end are given back at the end.
func TestWriteback(t *testing.T) {
	want := reference(t)
	for _, unsupported := range []bool{false, true} {
		var starts, flushes, reserves atomic.Int32
		cfg := fakeConfig(t)
		cfg.writebackEvery = 256
		cfg.writeback = func(f *os.File) error {
			starts.Add(1)
			if unsupported {
				return errors.ErrUnsupported
			}
			return startWriteback(f)
		}
		cfg.flush = func(f *os.File) error {
			flushes.Add(1)
			if unsupported {
				return fmt.Errorf("no fdatasync here: %w", errors.ErrUnsupported)
			}
			return flushData(f)
		}
		cfg.reserve = func(f *os.File, off, n int64) error {
			reserves.Add(1)
			if unsupported {
				return fmt.Errorf("no fallocate here: %w", errors.ErrUnsupported)
			}
			return reserveBlocks(f, off, n)
		}
		path := filepath.Join(t.TempDir(), "out.jsonl")
		res, err := tail(context.Background(), path, cfg)
		require.NoError(t, err)
		require.True(t, res.Reached)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		assert.Equal(t, int32(1), reserves.Load(), "one reservation covers the run (1 MiB), or it failed")
		out, err := os.Open(path)
		require.NoError(t, err)
		assert.Less(t, allocated(t, out), int64(len(got))+64<<10, "no blocks past the end")
		out.Close()
		if unsupported {
			// The first request starts the writes and fails, the second
			// flushes and fails: neither is asked for again.
			assert.Equal(t, int32(1), starts.Load(), "asked again after a failure")
			assert.LessOrEqual(t, flushes.Load(), int32(1), "asked again after a failure")
		} else {
			// At most one a writebackEvery, at least one (the first
			// request always finds room); a flush every flushEvery-th.
			n := int(starts.Load() + flushes.Load())
			assert.LessOrEqual(t, n, len(want)/256)
			assert.Positive(t, n)
			assert.Equal(t, n/flushEvery, int(flushes.Load()))
		}
	}
}

// TestFlushFailureFailsTheRun: a flush that fails (a lost write: Linux
// tells only one fsync of it) ends the run with its error instead of an
// exit that says all is on disk; the file keeps whole lines, and the rerun
// completes it.
func TestFlushFailureFailsTheRun(t *testing.T) {
	want := reference(t)
	path := filepath.Join(t.TempDir(), "out.jsonl")
	cfg := fakeConfig(t)
	cfg.writebackEvery, cfg.flushEvery = 256, 1 // the first request, which always finds room, flushes
	cfg.flush = func(*os.File) error { return syscall.EIO }
	_, err := tail(context.Background(), path, cfg)
	require.ErrorIs(t, err, syscall.EIO)
	require.ErrorContains(t, err, "flushing "+path+" to disk")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(want, got), "the file is a prefix of an uninterrupted run's")
	require.True(t, len(got) == 0 || got[len(got)-1] == '\n', "whole lines")

	res, err := tail(context.Background(), path, fakeConfig(t))
	require.NoError(t, err)
	require.True(t, res.Reached)
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// TestStartWriteback: on Linux the writes of a regular file start and its
// data is flushed (a pipe, which has no pages to write, is refused, and
// its flush is unsupported); elsewhere neither is supported and the final
// fsync does all.
func TestStartWriteback(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	_, err = f.Write(bytes.Repeat([]byte("x"), 1<<20))
	require.NoError(t, err)
	err = startWriteback(f)
	if runtime.GOOS != "linux" {
		require.ErrorIs(t, err, errors.ErrUnsupported)
		require.ErrorIs(t, flushData(f), errors.ErrUnsupported)
		return
	}
	require.NoError(t, err)
	require.NoError(t, flushData(f))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.Error(t, startWriteback(w))
	assert.ErrorIs(t, flushData(w), errors.ErrUnsupported)
}
