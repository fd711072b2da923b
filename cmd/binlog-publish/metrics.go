package main

import (
	"context"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"

	"github.com/binlogstream/binlogstream/cmd/internal/metrics"
)

// serveMetrics serves --metrics ADDR until ctx ends and prints the URL
// (the bound port, for ADDR's port 0) unless quiet; nil without the flag.
// The log's errors become the last error.
func serveMetrics(ctx context.Context, addr string, logger *logrus.Logger, stderr io.Writer, quiet bool) (*metrics.Metrics, error) {
	if addr == "" {
		return nil, nil
	}
	m := metrics.New()
	a, err := m.Serve(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	logger.AddHook(m.Hook())
	if !quiet {
		fmt.Fprintf(stderr, "binlog-publish: serving metrics on http://%s/metrics\n", a)
	}
	return m, nil
}
