package nats

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Payloads reads every message of stream in order, with an ordered
// consumer, and returns their payloads.
func Payloads(t testing.TB, js jetstream.JetStream, stream string) [][]byte {
	t.Helper()
	var out [][]byte
	read(t, js, stream, func(m jetstream.Msg) { out = append(out, m.Data()) })
	return out
}

// Messages reads every message of stream in order and returns them as
// they would be published again: subject, payload, Nats-Msg-Id and the
// headers that are not the server's or the client's (Nats-*).
func Messages(t testing.TB, js jetstream.JetStream, stream string) []*nats.Msg {
	t.Helper()
	var out []*nats.Msg
	read(t, js, stream, func(m jetstream.Msg) {
		msg := nats.NewMsg(m.Subject())
		msg.Data = m.Data()
		for k, v := range m.Headers() {
			if k == jetstream.MsgIDHeader || !strings.HasPrefix(k, "Nats-") {
				msg.Header[k] = v
			}
		}
		out = append(out, msg)
	})
	return out
}

// read hands every message of stream, in order, to f.
func read(t testing.TB, js jetstream.JetStream, stream string, f func(jetstream.Msg)) {
	t.Helper()
	var info *jetstream.StreamInfo
	var c jetstream.Consumer
	// Right after a node's restart the cluster may not answer yet; on a
	// loaded machine, with race-detector builds, its stream leader's
	// election after two leader kills has taken over a minute. Each try
	// has its own timeout: a request lost in an election gets no answer,
	// and one timeout for all of them spent it on that one request.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := js.Stream(ctx, stream)
		if err == nil {
			if info, err = s.Info(ctx); err == nil {
				c, err = s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
			}
		}
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats: reading stream %s: %v", stream, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var n uint64
	for n < info.State.Msgs {
		batch, err := c.Fetch(1000, jetstream.FetchMaxWait(5*time.Second))
		if err == nil {
			for m := range batch.Messages() {
				f(m)
				n++
			}
			err = batch.Error()
		}
		if err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("nats: reading stream %s after %d messages: %v", stream, n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
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
