package nats

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Payloads reads every message of stream in order, with an ordered
// consumer, and returns their payloads.
func Payloads(t testing.TB, js jetstream.JetStream, stream string) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var info *jetstream.StreamInfo
	var c jetstream.Consumer
	// Right after a node's restart the cluster may not answer yet.
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err := js.Stream(ctx, stream)
		if err == nil {
			if info, err = s.Info(ctx); err == nil {
				c, err = s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
			}
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats: reading stream %s: %v", stream, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var out [][]byte
	for uint64(len(out)) < info.State.Msgs {
		batch, err := c.Fetch(1000, jetstream.FetchMaxWait(5*time.Second))
		if err == nil {
			for m := range batch.Messages() {
				out = append(out, m.Data())
			}
			err = batch.Error()
		}
		if err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("nats: reading stream %s after %d messages: %v", stream, len(out), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return out
}

// Diff compares the messages' payloads with the lines of want (each
// with its newline) and describes how they differ: "" when they are the
// same, line for line.
func Diff(want []byte, got [][]byte) string {
	lines := bytes.SplitAfter(want, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	seen := map[string]int{}
	dups := 0
	for _, g := range got {
		if seen[string(g)]++; seen[string(g)] == 2 {
			dups++
		}
	}
	missing := 0
	for _, l := range lines {
		if seen[string(l)] == 0 {
			missing++
		}
	}
	for i := range min(len(lines), len(got)) {
		if !bytes.Equal(lines[i], got[i]) {
			return fmt.Sprintf("%d lines, %d messages (%d duplicated, %d lines missing); first difference at %d:\nwant %.200q\ngot  %.200q",
				len(lines), len(got), dups, missing, i, lines[i], got[i])
		}
	}
	if len(lines) != len(got) {
		return fmt.Sprintf("%d lines, %d messages (%d duplicated, %d lines missing)", len(lines), len(got), dups, missing)
	}
	return ""
}
