package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlogstream/binlogstream/internal/kafkaends"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createTopic creates topic with partitions (-1: the broker's default),
// the broker's replication factor and configs; a topic that exists is
// used as it is.
func createTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, partitions, -1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	for _, rt := range resp.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			msg := ""
			if rt.ErrorMessage != nil {
				msg = ": " + *rt.ErrorMessage
			}
			return fmt.Errorf("creating topic %s: %w%s", topic, err, msg)
		}
	}
	return nil
}

// readKey hands fn, with read_committed, every record of key in topic
// up to each partition's last stable offset, in partition order.
func readKey(ctx context.Context, brokers []string, topic, key string, extra []kgo.Opt, fn func(*kgo.Record)) error {
	ends, err := stableEnds(ctx, brokers, topic, extra)
	if err != nil {
		return err
	}
	parts := map[int32]kgo.Offset{}
	for p, end := range ends {
		if end > 0 {
			parts[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(parts) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords()}, extra...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// The record before a last stable offset is a transaction's marker
	// or a record of no transaction: both come with KeepControlRecords.
	for len(parts) > 0 {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return fmt.Errorf("reading topic %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("reading topic %s partition %d: %w", t, p, err))
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := parts[r.Partition]; !ok {
				return
			}
			if !r.Attrs.IsControl() && string(r.Key) == key {
				fn(r)
			}
			if r.Offset+1 >= ends[r.Partition] {
				delete(parts, r.Partition)
			}
		})
	}
	return nil
}

// readCheckpoint is the last value of key in topic (readKey).
func readCheckpoint(ctx context.Context, brokers []string, topic, key string, extra []kgo.Opt) (value []byte, found bool, err error) {
	err = readKey(ctx, brokers, topic, key, extra, func(r *kgo.Record) { value, found = r.Value, true })
	return value, found, err
}

// stableEnds are the last stable offsets of topic's partitions.
func stableEnds(ctx context.Context, brokers []string, topic string, extra []kgo.Opt) (map[int32]int64, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, extra...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return kafkaends.Stable(ctx, cl, topic)
}
