package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/binlogstream/binlogstream"
	"github.com/binlogstream/binlogstream/debezium"
	"github.com/binlogstream/binlogstream/publish"
	"github.com/binlogstream/binlogstream/publish/kafka"
	kafkatest "github.com/binlogstream/binlogstream/testhelpers/kafka"
)

// benchKafka is BenchmarkRealPublish's kafka: kafka.Publisher fed the
// binlog's events from memory into kfake (a process of its own), in
// --format lines and debezium, each against a bare franz-go
// transactional produce loop of the same records (topics, keys, values,
// the resume header) committing every kafka.DefaultTxnRecords records.
// The four contenders take turns in every iteration, each on topics of
// their own (the library's checkpoint and schema topics included),
// deleted after the turn.
func benchKafka(b *testing.B, events []binlogstream.Event, start binlogstream.Position, rows int) {
	c := kafkatest.Start(b)
	formats := []publish.Format{publish.FormatLines, publish.FormatDebezium}
	recs := map[publish.Format][]*kgo.Record{}
	for _, f := range formats {
		recs[f] = kafkaRecords(b, f, events)
	}
	b.Logf("kafka: %d records of lines, %d of debezium", len(recs[publish.FormatLines]), len(recs[publish.FormatDebezium]))
	lib := map[publish.Format]time.Duration{}
	bare := map[publish.Format]time.Duration{}
	turn := 0
	for b.Loop() {
		for j := range 4 {
			f := formats[(turn+j)%4/2]
			prefix := fmt.Sprintf("k%d_", turn*4+j)
			t0 := time.Now()
			if (turn+j)%2 == 0 {
				runKafkaLibrary(b, c, f, prefix, events, start)
				lib[f] += time.Since(t0)
			} else {
				runKafkaBare(b, c, prefix, recs[f])
				bare[f] += time.Since(t0)
			}
			deleteKafkaTopics(b, c, prefix)
		}
		turn++
	}
	n := float64(b.N)
	lines, dbz := publish.FormatLines, publish.FormatDebezium
	b.ReportMetric(float64(rows)*n/lib[lines].Seconds(), "lines-rows/s")
	b.ReportMetric(float64(rows)*n/lib[dbz].Seconds(), "dbz-rows/s")
	b.ReportMetric(float64(len(recs[lines]))*n/bare[lines].Seconds(), "bare-lines-recs/s")
	b.ReportMetric(bare[lines].Seconds()/lib[lines].Seconds(), "lines-x-bare")
	b.ReportMetric(bare[dbz].Seconds()/lib[dbz].Seconds(), "dbz-x-bare")
	b.ReportMetric(lib[dbz].Seconds()/lib[lines].Seconds(), "dbz-cost")
	b.ReportMetric(loadAverage(b), "load1")
}

// kafkaRecords are the records kafka.Publisher makes of events in
// format, as the bare loop produces them (topic prefix "bare").
func kafkaRecords(b *testing.B, f publish.Format, events []binlogstream.Event) []*kgo.Record {
	r, err := publish.NewRecords(f, debezium.Options{TopicPrefix: "bare"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var out []*kgo.Record
	var buf []publish.Record
	for i := range events {
		if buf, err = r.Append(buf[:0], &events[i]); err != nil {
			b.Fatal(err)
		}
		for _, pr := range buf {
			topic := pr.Topic
			if topic == "" {
				topic = "bare"
				if pr.Table != "" {
					topic = "bare." + pr.Schema + "." + pr.Table
				}
			}
			out = append(out, &kgo.Record{Topic: kafka.TopicName(topic), Key: pr.Key, Value: pr.Value,
				Headers: []kgo.RecordHeader{{Key: kafka.ResumeHeader, Value: pr.Token}}})
		}
	}
	return out
}

// runKafkaLibrary publishes events with kafka.Publisher under prefix, as
// the source prefix names.
func runKafkaLibrary(b *testing.B, c *kafkatest.Cluster, f publish.Format, prefix string, events []binlogstream.Event, start binlogstream.Position) {
	ctx := context.Background()
	// Checkpoints and schema histories in topics of the turn's own, which
	// Open reads from their start.
	p, err := kafka.Open(ctx, kafka.Config{Brokers: c.Seeds(), Name: prefix, TopicPrefix: prefix, Format: f,
		OffsetsTopic: prefix + "offsets", SchemaTopic: prefix + "schemas"})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	p.StartAt(binlogstream.StartAt(start))
	for _, ev := range events {
		if err := p.OnEvent(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// runKafkaBare is the engine's limit: recs produced under prefix (their
// topics created first) in transactions of kafka.DefaultTxnRecords, with
// the library's producer settings.
func runKafkaBare(b *testing.B, c *kafkatest.Cluster, prefix string, recs []*kgo.Record) {
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...), kgo.TransactionalID("bare-"+prefix), kgo.TransactionTimeout(time.Minute), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	topics := map[string]string{}
	for _, r := range recs {
		if _, ok := topics[r.Topic]; !ok {
			topics[r.Topic] = prefix + r.Topic[len("bare"):]
			kafkaAdmin(b, cl, &kmsg.CreateTopicsRequest{TimeoutMillis: 30000,
				Topics: []kmsg.CreateTopicsRequestTopic{{Topic: topics[r.Topic], NumPartitions: -1, ReplicationFactor: -1}}})
		}
	}
	fail := make(chan error, 1)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case fail <- err:
			default:
			}
		}
	}
	commit := func() {
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	for _, r := range recs {
		if n == 0 {
			if err := cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
		}
		rec := *r
		rec.Topic = topics[r.Topic]
		cl.Produce(ctx, &rec, promise)
		if n++; n == kafka.DefaultTxnRecords {
			commit()
			n = 0
		}
	}
	if n > 0 {
		commit()
	}
	select {
	case err := <-fail:
		b.Fatal(err)
	default:
	}
}

// deleteKafkaTopics deletes the topics a turn wrote under prefix.
func deleteKafkaTopics(b *testing.B, c *kafkatest.Cluster, prefix string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Seeds()...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	req := &kmsg.DeleteTopicsRequest{TimeoutMillis: 30000}
	for _, t := range c.Topics(b, prefix) {
		req.TopicNames = append(req.TopicNames, t)
		req.Topics = append(req.Topics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(t)})
	}
	if len(req.Topics) > 0 {
		kafkaAdmin(b, cl, req)
	}
}

// kafkaAdmin sends a CreateTopics or DeleteTopics request and checks
// each topic's error.
func kafkaAdmin(b *testing.B, cl *kgo.Client, req kmsg.Request) {
	resp, err := cl.Request(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
				b.Fatalf("creating %s: %v", t.Topic, err)
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				b.Fatalf("deleting %v: %v", t.Topic, err)
			}
		}
	}
}
