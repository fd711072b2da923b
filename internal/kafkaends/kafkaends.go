// Package kafkaends reads where a Kafka topic's committed records end:
// the last stable offset of each partition (what a read_committed reader
// can reach), for the publisher's checkpoint read and the tests' reads.
package kafkaends

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Stable is the last stable offset of each of topic's partitions.
func Stable(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("topic %s: %w", topic, err)
	}
	lreq := kmsg.NewPtrListOffsetsRequest()
	lreq.IsolationLevel = 1 // read_committed: the last stable offset
	lreq.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	for _, t := range mresp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("topic %s: %w", topic, err)
		}
		for _, p := range t.Partitions {
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p.Partition, -1, -1
			lt.Partitions = append(lt.Partitions, lp)
		}
	}
	lreq.Topics = append(lreq.Topics, lt)
	ends := map[int32]int64{}
	for _, shard := range cl.RequestSharded(ctx, lreq) {
		if shard.Err != nil {
			return nil, fmt.Errorf("topic %s: listing offsets: %w", topic, shard.Err)
		}
		for _, t := range shard.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("topic %s partition %d: listing offsets: %w", topic, p.Partition, err)
				}
				ends[p.Partition] = p.Offset
			}
		}
	}
	return ends, nil
}
