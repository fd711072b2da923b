// Package metricstest reads what internal/metrics serves, for tests: a
// scrape parsed with Prometheus' own text parser, and the /metrics URL a
// command logs at its start.
package metricstest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is one scrape's metric families by name.
type Scrape map[string]*dto.MetricFamily

// Parse reads the text exposition format.
func Parse(r io.Reader) (Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

// Get scrapes url.
func Get(ctx context.Context, url string) (Scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return Parse(resp.Body)
}

// Value is the value of name's first sample (a counter, gauge or
// untyped one); ok is false when name is absent.
func (s Scrape) Value(name string) (v float64, ok bool) {
	f := s[name]
	if f == nil || len(f.Metric) == 0 {
		return 0, false
	}
	m := f.Metric[0]
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// Label is the label of name's first sample; "" when absent.
func (s Scrape) Label(name, label string) string {
	f := s[name]
	if f == nil || len(f.Metric) == 0 {
		return ""
	}
	for _, l := range f.Metric[0].Label {
		if l.GetName() == label {
			return l.GetValue()
		}
	}
	return ""
}

var urlLine = regexp.MustCompile(`serving metrics on (http://\S+/metrics)`)

// URL is the /metrics URL in a command's log ("" before the line).
func URL(log string) string {
	if m := urlLine.FindStringSubmatch(log); m != nil {
		return m[1]
	}
	return ""
}
