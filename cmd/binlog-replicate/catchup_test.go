package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"

	"github.com/binlogstream/binlogstream"
)

// stepStats serves one Stats a call from a script.
type stepStats struct {
	mu    sync.Mutex
	steps []binlogstream.Stats
	snap  int // tables the snapshot has left
}

func (s *stepStats) Stats() binlogstream.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.steps[0]
	if len(s.steps) > 1 {
		s.steps = s.steps[1:]
	}
	return st
}

func (s *stepStats) SnapshotStats() binlogstream.SnapshotStats {
	return binlogstream.SnapshotStats{Tables: s.snap}
}

// TestCatchUpLogged: "caught up" is logged each time the lag comes down
// to 0 after the stream was behind, with the position as file:pos, and
// not before the first event.
func TestCatchUpLogged(t *testing.T) {
	at := binlogstream.Position{File: "mysql-bin.000003", Offset: 900}
	pos := binlogstream.StartAt(at)
	behind := binlogstream.Stats{Lag: 3 * time.Second, At: at, Position: pos}
	idle := binlogstream.Stats{At: at, Position: pos, Delivered: 7}
	s := &stepStats{steps: []binlogstream.Stats{{}, behind, idle, idle, behind, idle, idle}}
	log, hook := logtest.NewNullLogger()
	log.SetLevel(logrus.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); watchCatchUp(ctx, s, log, time.Millisecond) }()
	assert.Eventually(t, func() bool { return len(hook.AllEntries()) >= 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // the script stays at idle: no third line
	cancel()
	<-done
	entries := hook.AllEntries()
	assert.Len(t, entries, 2)
	for _, e := range entries {
		assert.Equal(t, "caught up", e.Message)
		assert.Equal(t, "mysql-bin.000003:900", e.Data["at"])
	}

	// A snapshot still reading is not caught up.
	s2 := &stepStats{steps: []binlogstream.Stats{idle}, snap: 1}
	log2, hook2 := logtest.NewNullLogger()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	watchCatchUp(ctx2, s2, log2, time.Millisecond)
	assert.Empty(t, hook2.AllEntries())
}
