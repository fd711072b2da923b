package main

import (
	"context"
	"errors"
	"flag"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream/publish"
)

// leaseFlags are --lease, --lease-key and --lease-ttl: a standby waits
// for the source's lease, the active publisher holds it.
type leaseFlags struct {
	on  bool
	key string
	ttl time.Duration
}

func (f *leaseFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "lease", false, "publish only while holding the source's lease in the KV bucket "+publish.DefaultLeaseBucket+
		" (a standby waits for it and takes over when the holder stops renewing it)")
	fs.Func("lease-key", "the lease's `KEY` (implies --lease); default STREAM.PREFIX", func(s string) error {
		f.key, f.on = s, true
		return nil
	})
	fs.DurationVar(&f.ttl, "lease-ttl", publish.DefaultLeaseTTL, "how long the lease outlives its holder's last renewal (a created bucket's TTL; an existing bucket's own TTL wins)")
}

// holdLease waits for the lease with --lease and returns it with the
// function that releases it; without --lease, none. A signal while it
// waits returns no lease and no error.
func (o options) holdLease(ctx context.Context, js jetstream.JetStream, logger logrus.FieldLogger) (*publish.Lease, func(), error) {
	if !o.Lease.on {
		return nil, func() {}, nil
	}
	key := o.Lease.key
	if key == "" {
		key = publish.LeaseKey(o.Stream, o.Prefix)
	}
	lease, err := publish.AcquireLease(ctx, publish.LeaseConfig{JetStream: js, Key: key, TTL: o.Lease.ttl, Logger: logger})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, func() {}, nil
		}
		return nil, nil, err
	}
	return lease, func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := lease.Release(rctx); err != nil {
			logger.Warn(err)
		}
	}, nil
}

// whileHeld runs f with a context that ends when lease (if any) is
// lost, and then returns the lease's error: a publisher that lost its
// lease exits 1 with it.
func whileHeld(ctx context.Context, lease *publish.Lease, f func(context.Context) error) error {
	if lease == nil {
		return f(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lease.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	err := f(ctx)
	if lerr := lease.Check(); lerr != nil {
		return lerr
	}
	return err
}
