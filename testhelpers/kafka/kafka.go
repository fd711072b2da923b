// Package kafka gives tests a Kafka cluster: the one that the variable
// BINLOGSTREAM_KAFKA_BROKERS names (HOST:PORT,...), or else franz-go's
// kfake (an in-memory cluster with transactions and read_committed) in a
// process of its own, built from ./kfakeserver, so that a test can
// SIGKILL a publisher without taking the broker with it. It also reads
// topics back as a read_committed consumer does.
package kafka

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlogstream/binlogstream/internal/kafkaends"
	th "github.com/binlogstream/binlogstream/testhelpers"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokersEnv names a real cluster the tests use instead of kfake.
const BrokersEnv = "BINLOGSTREAM_KAFKA_BROKERS"

var build th.ModuleBinary

// binary builds kfakeserver once per test process.
func binary(t testing.TB) string {
	t.Helper()
	return build.Path(t, "./testhelpers/kafka/kfakeserver", "kfakeserver")
}

// Cluster is a Kafka cluster for one test.
type Cluster struct {
	// Brokers are its seed brokers, comma-separated.
	Brokers string
	// Real: BINLOGSTREAM_KAFKA_BROKERS named it; topics and names then
	// need Unique so that runs do not meet.
	Real bool
}

// Start returns the cluster of BINLOGSTREAM_KAFKA_BROKERS, or starts a
// kfake process for t, stopped when t ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if b := os.Getenv(BrokersEnv); b != "" {
		return &Cluster{Brokers: b, Real: true}
	}
	cmd := exec.Command(binary(t))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe() // closed when the test process dies: the server exits
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	brokers, ok := strings.CutPrefix(strings.TrimSpace(line), "brokers ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("kfakeserver: %q %v: %s", line, err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		stdin.Close()
		_ = cmd.Wait()
	})
	return &Cluster{Brokers: brokers}
}

// Seeds are the brokers as a list.
func (c *Cluster) Seeds() []string { return strings.Split(c.Brokers, ",") }

// Unique is name with a random suffix: topics and source names that
// runs against one real cluster do not share.
func Unique(name string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return name + "-" + hex.EncodeToString(b[:])
}

// Topics are the cluster's topics whose names start with prefix.
func (c *Cluster) Topics(t testing.TB, prefix string) []string {
	t.Helper()
	cl := c.client(t)
	defer cl.Close()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tp := range resp.Topics {
		if tp.Topic != nil && strings.HasPrefix(*tp.Topic, prefix) {
			out = append(out, *tp.Topic)
		}
	}
	sort.Strings(out)
	return out
}

func (c *Cluster) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.Seeds()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// ReadCommitted reads every committed record of topics, as a
// read_committed consumer does, up to each partition's last stable
// offset: in partition order, the partitions one after the other.
func (c *Cluster) ReadCommitted(t testing.TB, topics ...string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ends := map[string]map[int32]int64{}
	consume := map[string]map[int32]kgo.Offset{}
	admin := c.client(t)
	defer admin.Close()
	for _, topic := range topics {
		e, err := kafkaends.Stable(ctx, admin, topic)
		if err != nil {
			t.Fatal(err)
		}
		ends[topic] = e
		for p, end := range e {
			if end > 0 {
				if consume[topic] == nil {
					consume[topic] = map[int32]kgo.Offset{}
				}
				consume[topic][p] = kgo.NewOffset().AtStart()
			}
		}
	}
	type tp struct {
		topic string
		p     int32
	}
	left := map[tp]bool{}
	for topic, ps := range consume {
		for p := range ps {
			left[tp{topic, p}] = true
		}
	}
	byPart := map[tp][]*kgo.Record{}
	if len(left) > 0 {
		cl := c.client(t, kgo.ConsumePartitions(consume), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
			kgo.FetchMaxBytes(64<<20))
		defer cl.Close()
		for len(left) > 0 {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("reading %v: %v", topics, ctx.Err())
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("reading %s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				k := tp{r.Topic, r.Partition}
				if !left[k] {
					return
				}
				if !r.Attrs.IsControl() {
					byPart[k] = append(byPart[k], r)
				}
				if r.Offset+1 >= ends[r.Topic][r.Partition] {
					delete(left, k)
				}
			})
		}
	}
	keys := make([]tp, 0, len(byPart))
	for k := range byPart {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].p < keys[j].p
	})
	var out []*kgo.Record
	for _, k := range keys {
		out = append(out, byPart[k]...)
	}
	return out
}
