package publish

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spoolFiles counts this process's open files in dir, and how many of
// them are unlinked; it skips the test without /proc.
func spoolFiles(t *testing.T, dir string) (open, unlinked int) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || !strings.HasPrefix(target, dir+string(filepath.Separator)) {
			continue
		}
		open++
		if strings.HasSuffix(target, " (deleted)") {
			unlinked++
		}
	}
	return open, unlinked
}

// dirEmpty asserts that dir holds no file.
func dirEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents, "files left in the spool directory")
}

// TestSpoolSpillsAndReadsBack: a transaction stays in memory up to the
// limit, then goes to one unlinked file; read back, unit by unit with
// every skip, it makes the units units makes in memory; the file is
// closed once published, and a small spilled transaction is read back
// at once and its file closed when it is queued.
func TestSpoolSpillsAndReadsBack(t *testing.T) {
	dir := t.TempDir()
	msgs, from, _ := queueTxn(7, 2500)
	msgs[3].data = []byte(strings.Repeat("y", 70000) + "\n") // a line longer than the buffers
	var lines int64
	s := newSpool(dir, 10000)
	for i, m := range msgs {
		require.NoError(t, s.add(m))
		lines += int64(len(m.subject) + len(m.data))
		if lines <= 10000 {
			require.Nil(t, s.f, "message %d: spilled under the limit", i)
		}
	}
	require.NotNil(t, s.f)
	dirEmpty(t, dir)
	open, unlinked := spoolFiles(t, dir)
	assert.Equal(t, 1, open, "one spool file")
	assert.Equal(t, 1, unlinked, "unlinked as soon as created")
	assert.Nil(t, s.msgs, "nothing kept in memory once spilled")

	tx, err := s.txn(context.Background(), from, 0, MaxBatch)
	require.NoError(t, err)
	require.NotNil(t, tx.file)
	assert.Equal(t, 2500, tx.n)
	assert.Equal(t, string(msgs[2499].token), string(tx.last))

	back, err := tx.file.reader().read(nil, tx.n)
	require.NoError(t, err)
	require.Equal(t, msgs, back)
	_, err = tx.file.reader().read(nil, tx.n+1)
	assert.ErrorContains(t, err, "reading message 2501 of 2500")

	for _, max := range []int{MaxBatch, 7, 1} {
		for _, skip := range []int{0, 1, 6, 7, 999, 1000, 1001, 1500, 2499} {
			want := refUnits(msgs, from, max, skip)
			var got [][]*nats.Msg
			require.NoError(t, tx.file.eachUnit(tx.first, tx.from, max, skip, func(u []*nats.Msg) error {
				got = append(got, u)
				return nil
			}))
			require.NoError(t, sameUnits(want, got), "max %d, skip %d", max, skip)
		}
	}
	// An error of the publish stops the reading.
	calls := 0
	stop := errors.New("stop")
	err = tx.file.eachUnit(tx.first, tx.from, MaxBatch, 0, func([]*nats.Msg) error { calls++; return stop })
	assert.Equal(t, stop, err)
	assert.Equal(t, 1, calls)

	s.taken(tx)
	open, _ = spoolFiles(t, dir)
	assert.Equal(t, 1, open, "the queued transaction owns the file")
	tx.file.close()
	open, _ = spoolFiles(t, dir)
	assert.Zero(t, open, "closed once published")

	// Spilled, but one batch: read back into memory, its file closed when queued.
	for _, m := range msgs[:MaxBatch] {
		require.NoError(t, s.add(m))
	}
	require.NotNil(t, s.f)
	small, err := s.txn(context.Background(), from, 0, MaxBatch)
	require.NoError(t, err)
	require.Nil(t, small.file)
	require.NoError(t, sameUnits(refUnits(msgs[:MaxBatch], from, MaxBatch, 0), small.units))
	s.taken(small)
	open, _ = spoolFiles(t, dir)
	assert.Zero(t, open)

	// Dropped by the publisher's Close.
	for _, m := range msgs {
		require.NoError(t, s.add(m))
	}
	s.discard()
	open, _ = spoolFiles(t, dir)
	assert.Zero(t, open)
	dirEmpty(t, dir)
}

// TestSpoolErrors: a directory that is missing, a file or not writable
// is an error naming it, when the spool spills; a file cut short is an
// error on reading it back.
func TestSpoolErrors(t *testing.T) {
	msgs, from, _ := queueTxn(0, 5)
	base := t.TempDir()
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	dirs := []string{filepath.Join(base, "missing"), file, "/proc"}
	if os.Geteuid() != 0 {
		ro := filepath.Join(base, "ro")
		require.NoError(t, os.Mkdir(ro, 0o500))
		dirs = append(dirs, ro)
	}
	for _, dir := range dirs {
		s := newSpool(dir, int64(len(msgs[0].subject)+len(msgs[0].data)))
		require.NoError(t, s.add(msgs[0]), "the first message stays in memory")
		err := s.add(msgs[1])
		require.Error(t, err, dir)
		assert.Contains(t, err.Error(), "spool directory "+dir+": ")
	}

	dir := t.TempDir()
	s := newSpool(dir, 1)
	for _, m := range msgs {
		require.NoError(t, s.add(m))
	}
	require.NoError(t, s.w.Flush())
	require.NoError(t, s.f.Truncate(s.written-3))
	s.written -= 3
	_, err := s.txn(context.Background(), from, 0, MaxBatch)
	assert.ErrorContains(t, err, "spool file in "+dir+": reading message 5 of 5: unexpected EOF")
	s.discard()
}

// TestPublisherClosesSpoolFiles: a spilled transaction queued to a
// sender that fails (its lease lost) has its file closed, and so has
// the open transaction's on Close.
func TestPublisherClosesSpoolFiles(t *testing.T) {
	dir := t.TempDir()
	p := &Publisher{
		cfg:      Config{MaxBatch: MaxBatch, RetryFor: time.Second, Lease: &Lease{state: leaseState{err: ErrLeaseLost}}},
		atomic:   true,
		instance: "test",
		pending:  newSpool(dir, 1),
	}
	p.cond = sync.NewCond(&p.mu)
	ctx := context.Background()
	for i, n := range []int{2500, 1500} {
		msgs, _, _ := queueTxn(i, n)
		for _, m := range msgs {
			require.NoError(t, p.pending.add(m))
		}
		if err := p.endTxn(ctx); err != nil {
			require.ErrorIs(t, err, ErrLeaseLost)
			break
		}
	}
	require.ErrorIs(t, p.Wait(ctx), ErrLeaseLost)
	open, _ := spoolFiles(t, dir)
	assert.LessOrEqual(t, open, 1, "only the open transaction's file")
	p.Close()
	open, _ = spoolFiles(t, dir)
	assert.Zero(t, open, "no spool file open after Close")
	dirEmpty(t, dir)
}
