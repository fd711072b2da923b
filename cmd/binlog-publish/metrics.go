package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream/cmd/internal/metrics"
)

// serveMetrics serves --metrics ADDR until ctx ends and logs the URL
// (the bound port, for ADDR's port 0) at info; nil without the flag.
// The log's errors become the last error. The publisher's own metrics
// include the lease's gauge when leased (--lease).
func serveMetrics(ctx context.Context, addr string, leased bool, logger *logrus.Logger) (*metrics.Metrics, *metrics.Publish, error) {
	if addr == "" {
		return nil, nil, nil
	}
	m := metrics.New()
	pm := m.Publish(leased)
	a, err := m.Serve(ctx, addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics: %w", err)
	}
	logger.AddHook(m.Hook())
	logger.Infof("serving metrics on http://%s/metrics", a)
	return m, pm, nil
}

// onStored is pm's Stored, nil without --metrics.
func onStored(pm *metrics.Publish) func(int, time.Duration) {
	if pm == nil {
		return nil
	}
	return pm.Stored
}
