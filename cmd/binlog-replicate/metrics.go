package main

import (
	"context"
	"fmt"

	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream/cmd/internal/metrics"
)

// serveMetrics serves --metrics ADDR until ctx ends and logs the URL
// (the bound port, for ADDR's port 0); nil without the flag. The log's
// errors become the last error.
func serveMetrics(ctx context.Context, addr string, log *logrus.Logger) (*metrics.Metrics, error) {
	if addr == "" {
		return nil, nil
	}
	m := metrics.New()
	a, err := m.Serve(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	log.AddHook(m.Hook())
	log.Infof("serving metrics on http://%s/metrics", a)
	return m, nil
}
