// Package metricstest reads what internal/metrics serves, for tests: a
// scrape parsed with Prometheus' own text parser, and the /metrics URL a
// command logs at its start.
package metricstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlogstream/binlogstream/cmd/internal/metrics"
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

// Log is an io.Writer for a command's stderr that tests read while the
// command writes it.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitURL waits up to 30 seconds for the /metrics URL in log.
func WaitURL(t testing.TB, log *Log) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if u := URL(log.String()); u != "" {
			return u
		}
	}
	t.Fatalf("no metrics URL in the log:\n%s", log.String())
	return ""
}

// MustGet scrapes url, failing t on an error.
func MustGet(t testing.TB, url string) Scrape {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Get(ctx, url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return s
}

// Position is binlogstream_position_file_number and
// binlogstream_position_offset_bytes; ok is false when they are absent.
func (s Scrape) Position() (file, offset float64, ok bool) {
	file, ok = s.Value("binlogstream_position_file_number")
	offset, _ = s.Value("binlogstream_position_offset_bytes")
	return file, offset, ok
}

// MustStatus reads the /status beside the /metrics at metricsURL,
// failing t on an error.
func MustStatus(t testing.TB, metricsURL string) metrics.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(metricsURL, "/metrics")+"/status", nil)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	defer resp.Body.Close()
	var st metrics.Status
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

// CheckStep checks what must hold from one scrape of a running stream
// to the next: the counters never go down, the position never goes
// back, the lags are finite and not negative.
func CheckStep(t testing.TB, prev, cur Scrape) {
	t.Helper()
	for _, name := range []string{"binlogstream_rows_total", "binlogstream_events_total", "binlogstream_reconnects_total", "binlogstream_errors_total"} {
		p, _ := prev.Value(name)
		c, ok := cur.Value(name)
		if !ok || c < p {
			t.Errorf("%s went from %v to %v (present: %v)", name, p, c, ok)
		}
	}
	pf, po, _ := prev.Position()
	cf, co, _ := cur.Position()
	if cf < pf || cf == pf && co < po {
		t.Errorf("the position went back from %v:%v to %v:%v", pf, po, cf, co)
	}
	for _, name := range []string{"binlogstream_lag_seconds", "binlogstream_lag_bytes"} {
		if v, ok := cur.Value(name); ok && (v < 0 || math.IsInf(v, 0) || math.IsNaN(v)) {
			t.Errorf("%s = %v", name, v)
		}
	}
}
