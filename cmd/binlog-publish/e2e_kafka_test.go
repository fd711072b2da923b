package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlogstream/binlogstream/publish/kafka"
	th "github.com/binlogstream/binlogstream/testhelpers"
	kafkatest "github.com/binlogstream/binlogstream/testhelpers/kafka"
	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// kafkaRun is one test's Kafka and the flags that name its topics: on a
// real cluster (BINLOGSTREAM_KAFKA_BROKERS) a prefix and name of its own.
type kafkaRun struct {
	c                              *kafkatest.Cluster
	prefix, name, offsets, schemas string
}

func startKafka(t *testing.T) *kafkaRun {
	c := kafkatest.Start(t)
	r := &kafkaRun{c: c, prefix: "binlog", name: "src", offsets: kafka.DefaultOffsetsTopic, schemas: kafka.DefaultSchemaTopic}
	if c.Real {
		r.prefix, r.name = kafkatest.Unique("binlog"), kafkatest.Unique("src")
		r.offsets, r.schemas = r.prefix+"-offsets", r.prefix+"-schemas"
	}
	return r
}

// args are binlog-publish's flags for s into r, from start.
func (r *kafkaRun) args(s *mariadb.Server, start string, extra ...string) []string {
	a := []string{"--dsn", s.DSN(mariadb.ReplUser), "--kafka", r.c.Brokers, "--topic-prefix", r.prefix, "--start", start, "--quiet"}
	if r.c.Real {
		a = append(a, "--name", r.name, "--offsets-topic", r.offsets, "--schema-topic", r.schemas)
	}
	return append(a, extra...)
}

// records are the committed records of the run's table and statement
// topics, each partition in order.
func (r *kafkaRun) records(t *testing.T) []*kgo.Record {
	var topics []string
	for _, tp := range r.c.Topics(t, r.prefix) {
		if tp == r.prefix || strings.HasPrefix(tp, r.prefix+".") {
			topics = append(topics, tp)
		}
	}
	return r.c.ReadCommitted(t, topics...)
}

// checkLines compares the records of --format lines with binlog-tail's
// lines: each line exactly once, and each partition's lines in the
// order binlog-tail wrote them.
func checkLines(t *testing.T, want []byte, recs []*kgo.Record) {
	t.Helper()
	require.Empty(t, linesProblems(want, recs), "records against binlog-tail's lines")
}

// linesProblems are checkLines' findings.
func linesProblems(want []byte, recs []*kgo.Record) []string {
	index := map[string]int{}
	for i, l := range bytes.SplitAfter(want, []byte("\n")) {
		if len(l) > 0 {
			index[string(l)] = i
		}
	}
	seen := map[string]int{}
	last := map[string]int{}
	var problems []string
	for _, r := range recs {
		line := string(r.Value)
		seen[line]++
		i, ok := index[line]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s/%d@%d: a line binlog-tail did not write: %.200s", r.Topic, r.Partition, r.Offset, line))
			continue
		}
		if seen[line] == 2 {
			problems = append(problems, fmt.Sprintf("%s/%d@%d: duplicated: %.200s", r.Topic, r.Partition, r.Offset, line))
		}
		part := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
		if j, ok := last[part]; ok && i <= j {
			problems = append(problems, fmt.Sprintf("%s@%d: out of binlog order: %.200s", part, r.Offset, line))
		}
		last[part] = i
		if tok := header(r, kafka.ResumeHeader); !strings.Contains(line, `"resume":"`+tok+`"`) {
			problems = append(problems, fmt.Sprintf("%s@%d: header %s %q is not the line's token", part, r.Offset, kafka.ResumeHeader, tok))
		}
	}
	missing := 0
	for l := range index {
		if seen[l] == 0 {
			missing++
			if missing <= 5 {
				problems = append(problems, fmt.Sprintf("missing: %.200s", l))
			}
		}
	}
	if missing > 0 {
		problems = append(problems, fmt.Sprintf("%d lines missing of %d", missing, len(index)))
	}
	if len(problems) > 20 {
		problems = append(problems[:20], fmt.Sprintf("... and %d more", len(problems)-20))
	}
	return problems
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestKafkaExact: a workload published into Kafka, the publisher
// SIGKILLed, stopped (SIGTERM) and SIGKILLed, and finished: the committed records are
// binlog-tail's lines, each once, each partition in binlog order, each
// record with its token in the binlogstream.resume header.
func TestKafkaExact(t *testing.T) {
	s, start := setupSource(t)
	k := startKafka(t)
	stopWorkload := startWorkload(t, s)
	args := k.args(s, start)
	for i := range 3 {
		p := startPublisher(t, args...)
		time.Sleep(1500 * time.Millisecond)
		if i == 1 {
			p.stop(t)
		} else {
			p.kill()
		}
	}
	stopWorkload()
	finish(t, args)

	recs := k.records(t)
	checkLines(t, reference(t, s, start), recs)
	assert.NotEmpty(t, recs)

	// The checkpoint: keyed by the source's name (--name, by default
	// --dsn's HOST:PORT), its value the token and the format.
	offsets := k.c.ReadCommitted(t, k.offsets)
	require.NotEmpty(t, offsets)
	last := offsets[len(offsets)-1]
	name := s.Addr()
	if k.c.Real {
		name = k.name
	}
	assert.Equal(t, name, string(last.Key))
	var c struct{ Resume, Format string }
	require.NoError(t, json.Unmarshal(last.Value, &c))
	assert.Equal(t, "lines", c.Format)
	assert.Equal(t, c.Resume, header(last, kafka.ResumeHeader))
	// Another format for the same source is refused.
	out, err := exec.Command(th.Command(t, "binlog-publish"), append(args, "--format", "debezium", "--stop-at-current")...).CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "was published with --format lines: run with --format lines to continue it, or use another --name")
	t.Logf("%d records equal to binlog-tail's lines; %d checkpoints", len(recs), len(offsets))
}

// setupSource starts MariaDB with the table d.w and returns where the
// binlog stands after the DDL.
func setupSource(t *testing.T) (*mariadb.Server, string) {
	mariadb.Require(t)
	if testing.Short() {
		t.Skip("starts MariaDB and a Kafka broker")
	}
	s := mariadb.Start(t, mariadb.Options{})
	s.Exec(t, "CREATE DATABASE d", "USE d", "CREATE TABLE w (txn INT, k INT, n INT, pad VARCHAR(40), PRIMARY KEY (txn, k))")
	file, pos := s.MasterStatus(t)
	return s, fmt.Sprintf("%s:%d", file, pos)
}

// stop sends SIGTERM and requires a clean exit.
func (p *publisher) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		require.NoError(t, err, "%s", p.stderr.String())
	case <-time.After(time.Minute):
		p.kill()
		t.Fatalf("binlog-publish still running a minute after SIGTERM: %s", p.stderr.String())
	}
}

// startWorkload runs workload on s until the returned function (or the
// test's end) stops it; it returns the transactions run.
func startWorkload(t *testing.T, s *mariadb.Server) func() int {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var txns int
	wg.Go(func() { txns = workload(t, s, stop) })
	var once sync.Once
	halt := func() int {
		once.Do(func() {
			close(stop)
			wg.Wait()
		})
		return txns
	}
	t.Cleanup(func() { halt() })
	return halt
}

// TestKafkaNegativeControlUntransacted: the harness of TestKafkaExact
// finds the duplicates of a publisher built without transactions (the
// build tag binlogstream_kafka_untransacted: records and checkpoints
// produced and flushed, no transactional.id), SIGKILLed and restarted.
func TestKafkaNegativeControlUntransacted(t *testing.T) {
	s, start := setupSource(t)
	k := startKafka(t)
	bin := buildTagged(t, "binlogstream_kafka_untransacted")
	stopWorkload := startWorkload(t, s)
	args := k.args(s, start)
	for range 6 {
		p := startBinary(t, bin, args...)
		time.Sleep(time.Duration(700+rand.IntN(600)) * time.Millisecond)
		p.kill()
	}
	stopWorkload()
	out, err := exec.Command(bin, append(args, "--stop-at-current")...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	problems := linesProblems(reference(t, s, start), k.records(t))
	require.NotEmpty(t, problems, "a publisher without transactions, SIGKILLed, must leave duplicates")
	assert.Contains(t, strings.Join(problems, "\n"), "duplicated")
	t.Logf("negative control: %d problems, the first: %s", len(problems), problems[0])
}

// TestKafkaZombieFenced: a second publisher for the same source fences
// the first, which stops with the fencing error; the topics stay exact.
func TestKafkaZombieFenced(t *testing.T) {
	s, start := setupSource(t)
	k := startKafka(t)
	stopWorkload := startWorkload(t, s)
	args := k.args(s, start)
	a := startPublisher(t, append(args, "--server-id", "501")...)
	time.Sleep(2 * time.Second)
	b := startPublisher(t, append(args, "--server-id", "502")...)
	select {
	case <-a.done:
	case <-time.After(time.Minute):
		t.Fatalf("the first publisher still runs a minute after the second started: %s", a.stderr.String())
	}
	assert.Contains(t, a.stderr.String(), "transactional.id binlogstream-"+s.Addr()+": another publisher for the same source took over its transactional.id")
	assert.Equal(t, 1, a.cmd.ProcessState.ExitCode())
	time.Sleep(time.Second)
	stopWorkload()
	b.stop(t)
	finish(t, args)
	recs := k.records(t)
	checkLines(t, reference(t, s, start), recs)
	t.Logf("fenced: %s; %d records exact", strings.TrimSpace(a.stderr.String()), len(recs))
}
