package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LatencyBuckets are the upper bounds of
// binlogstream_publish_latency_seconds' buckets: from a millisecond (a
// local JetStream's ack) to a minute (a publish retried through a
// leader change).
var LatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// Publish is binlog-publish's own metrics: what its publisher stored
// and, with --lease, whether this process holds the lease. Its methods
// are no-ops on a nil *Publish (no --metrics).
type Publish struct {
	messages, batches prometheus.Counter
	latency           prometheus.Histogram

	mu   sync.Mutex
	held func() bool
}

// Publish registers binlog-publish's metrics on m's registry and
// returns them; leased adds binlogstream_publish_lease_held, 0 until
// SetLease. Call it once.
func (m *Metrics) Publish(leased bool) *Publish {
	p := &Publish{
		messages: prometheus.NewCounter(prometheus.CounterOpts{Name: "binlogstream_publish_messages_total",
			Help: "Messages the stream acknowledged (NATS) or records committed (Kafka)."}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{Name: "binlogstream_publish_batches_total",
			Help: "Publishes the stream acknowledged (atomic batches or single messages; NATS) or transactions committed (Kafka)."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "binlogstream_publish_latency_seconds",
			Help:    "Time from a batch's send to its ack (NATS, retries included) or from a Kafka transaction's first record to its commit.",
			Buckets: LatencyBuckets}),
	}
	m.reg.MustRegister(p.messages, p.batches, p.latency)
	if leased {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "binlogstream_publish_lease_held",
			Help: "1 while this process holds the source's lease (--lease), else 0."}, p.leaseHeld))
	}
	return p
}

// Stored counts a batch of n messages acknowledged latency after it was
// sent: publish.Config.OnStored and kafka.Config.OnCommit.
func (p *Publish) Stored(n int, latency time.Duration) {
	if p == nil {
		return
	}
	p.messages.Add(float64(n))
	p.batches.Inc()
	p.latency.Observe(latency.Seconds())
}

// SetLease makes binlogstream_publish_lease_held read held (1 for
// true).
func (p *Publish) SetLease(held func() bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.held = held
	p.mu.Unlock()
}

func (p *Publish) leaseHeld() float64 {
	p.mu.Lock()
	held := p.held
	p.mu.Unlock()
	if held != nil && held() {
		return 1
	}
	return 0
}
