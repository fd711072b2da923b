package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/binlogstream/binlogstream/debezium"
	"github.com/binlogstream/binlogstream/publish"
	"github.com/binlogstream/binlogstream/publish/kafka"
)

// kafkaFlags are --kafka and what goes with it, and --format with the
// Debezium flags (both transports).
type kafkaFlags struct {
	Brokers      string
	Name         string
	TopicPrefix  string
	OffsetsTopic string
	SchemaTopic  string

	Format          string
	DecimalHandling string
	Schemas         bool
	NoTombstones    bool
	// TransactionTopic: Debezium's transaction metadata events too.
	TransactionTopic bool
}

func (f *kafkaFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.Brokers, "kafka", "", "publish into Kafka instead of NATS: the seed `BROKERS` HOST:PORT[,HOST:PORT...]")
	fs.StringVar(&f.Name, "name", "", "--kafka: the source's `NAME`: the key of its checkpoint and its transactional.id "+kafka.TransactionalIDPrefix+
		"NAME (default: --dsn's HOST:PORT); a second publisher with the same name fences the first")
	fs.StringVar(&f.TopicPrefix, "topic-prefix", publish.DefaultPrefix, "--kafka: the topics' `PREFIX`: PREFIX.DB.TABLE for a table's records, PREFIX for statements")
	fs.StringVar(&f.OffsetsTopic, "offsets-topic", kafka.DefaultOffsetsTopic, "--kafka: the compacted `TOPIC` of the checkpoints, keyed by --name")
	fs.StringVar(&f.SchemaTopic, "schema-topic", kafka.DefaultSchemaTopic, "--kafka: the `TOPIC` of the schema histories, keyed by --name")
	fs.StringVar(&f.Format, "format", string(publish.FormatLines), "`FORMAT`, what a message holds: lines (binlog-tail's line) or debezium "+
		"(a Debezium MySQL connector change event; see docs/debezium.md)")
	fs.StringVar(&f.DecimalHandling, "decimal-handling", string(debezium.DecimalPrecise), "--format debezium: DECIMAL as Debezium's decimal.handling.mode `MODE`: "+
		"precise, string or double")
	fs.BoolVar(&f.Schemas, "schemas", false, "--format debezium: keys and values as {\"schema\",\"payload\"} (Kafka Connect's JsonConverter with schemas.enable=true)")
	fs.BoolVar(&f.NoTombstones, "no-tombstones", false, "--format debezium: no tombstone after a delete")
	fs.BoolVar(&f.TransactionTopic, "transaction-topic", false, "--kafka --format debezium: also write Debezium's transaction metadata events "+
		"(BEGIN and END of each transaction with change events) to the topic PREFIX.transaction")
}

// check validates the flags against the transport.
func (f *kafkaFlags) check(nats string, set map[string]bool) error {
	format, err := publish.ParseFormat(f.Format)
	if err != nil {
		return err
	}
	if format == publish.FormatLines {
		for _, name := range []string{"decimal-handling", "schemas", "no-tombstones", "transaction-topic"} {
			if set[name] {
				return fmt.Errorf("--%s needs --format debezium", name)
			}
		}
	} else if _, err := debezium.NewEncoder(f.debeziumOptions()); err != nil {
		return fmt.Errorf("--decimal-handling %q: want precise, string or double", f.DecimalHandling)
	}
	if f.Brokers == "" {
		for _, name := range []string{"name", "topic-prefix", "offsets-topic", "schema-topic", "transaction-topic"} {
			if set[name] {
				return fmt.Errorf("--%s needs --kafka", name)
			}
		}
		return nil
	}
	if nats != "" {
		return errors.New("--kafka and --nats: give one of them")
	}
	for _, name := range []string{"stream", "subject-prefix", "lease", "lease-key", "lease-ttl", "spool-dir", "spool-mib"} {
		if set[name] {
			return fmt.Errorf("--%s is for --nats, not --kafka", name)
		}
	}
	if f.TopicPrefix == "" || f.OffsetsTopic == "" || f.SchemaTopic == "" {
		return errors.New("--topic-prefix, --offsets-topic and --schema-topic must not be empty")
	}
	return nil
}

func (f *kafkaFlags) debeziumOptions() debezium.Options {
	return debezium.Options{TopicPrefix: f.TopicPrefix, DecimalHandling: debezium.DecimalHandling(f.DecimalHandling),
		Schemas: f.Schemas, NoTombstones: f.NoTombstones, TransactionMetadata: f.TransactionTopic}
}

// sourceName is --name, else --dsn's HOST:PORT (its socket path).
func (o options) sourceName() string {
	if o.Kafka.Name != "" {
		return o.Kafka.Name
	}
	if o.DSN.Socket != "" {
		return o.DSN.Socket
	}
	return net.JoinHostPort(o.DSN.Host, strconv.Itoa(int(o.DSN.Port)))
}

// runKafka is run for --kafka.
func runKafka(ctx context.Context, o options, stderr io.Writer) error {
	logger := newLogger(o, stderr)
	m, pm, err := serveMetrics(ctx, o.Metrics, false, logger)
	if err != nil {
		return err
	}
	tables, err := o.serverTables(ctx)
	if err != nil {
		return err
	}
	pub, err := kafka.Open(ctx, kafka.Config{Brokers: strings.Split(o.Kafka.Brokers, ","), Name: o.sourceName(), TopicPrefix: o.Kafka.TopicPrefix,
		OffsetsTopic: o.Kafka.OffsetsTopic, SchemaTopic: o.Kafka.SchemaTopic, Format: publish.Format(o.Kafka.Format),
		Debezium: o.Kafka.debeziumOptions(), Tables: o.Tables, Logger: logger, OnCommit: onStored(pm)})
	if err != nil {
		return err
	}
	defer pub.Close()
	flavor, src, st, err := openSource(ctx, o, tables, logger, pub.Resumed(), pub.StartAt)
	if err != nil {
		return err
	}
	return stream(ctx, o, flavor, kafkaSink{pub}, src, st, pub.SchemaStore(), logger, m)
}

// kafkaSink is a Kafka publisher as stream uses it: Wait commits what
// the stream left whole.
type kafkaSink struct{ *kafka.Publisher }

func (k kafkaSink) Wait(ctx context.Context) error { return k.Flush(ctx) }
