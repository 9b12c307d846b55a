package dcgm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

const (
	// defaultTimeout bounds one target's scrape when Scraper.Timeout is not set.
	defaultTimeout = 10 * time.Second
	// maxBody bounds a scrape or query answer: a node with 8 GPUs, every DCGM field and a
	// pod per series is well under 1 MiB.
	maxBody = 32 << 20
	// maxParallel bounds the targets scraped at once.
	maxParallel = 16
)

// Target is one dcgm-exporter endpoint. Node is the node it runs on: the node of its samples
// when the exporter writes no hostname label.
type Target struct {
	URL  string // e.g. http://10.0.3.7:9400/metrics
	Node string
}

// Scraper scrapes dcgm-exporter targets every Interval and publishes one gpu_sample envelope per
// GPU, MIG instance and pod. A failing target is logged and counted and never stops the loop.
// Targets, Cluster, Source, Publish and (for Run) Interval are required. Publish is only called
// from the goroutine running ScrapeOnce or Run. A Scraper must not be copied after first use.
type Scraper struct {
	Targets  func() []Target // read at the start of each round: nodes come and go
	Interval time.Duration   // between the starts of two rounds; each sample's period_s
	Timeout  time.Duration   // per target; 10s when zero
	Client   *http.Client    // http.DefaultClient when nil
	Cluster  string
	Source   string
	Resolver Resolver // nil: samples are published without pods
	Publish  func(*events.Envelope)
	Logger   *slog.Logger     // discarded when nil
	Clock    func() time.Time // time.Now when nil; stamps occurred_at and observed_at

	rounds, scrapes, failures, published atomic.Uint64
}

// ScrapeStats counts what a Scraper has done since it was created, for the collector's metrics.
type ScrapeStats struct {
	Rounds    uint64 // calls of ScrapeOnce
	Scrapes   uint64 // target scrapes that succeeded
	Failures  uint64 // target scrapes that failed (status, network, timeout, unparsable body, bad sample)
	Published uint64 // envelopes passed to Publish
}

// Stats returns the scraper's counters.
func (s *Scraper) Stats() ScrapeStats {
	return ScrapeStats{
		Rounds:    s.rounds.Load(),
		Scrapes:   s.scrapes.Load(),
		Failures:  s.failures.Load(),
		Published: s.published.Load(),
	}
}

// Run scrapes every Interval, the first round at once, until ctx ends; it then returns nil.
// Failures are logged and counted by ScrapeOnce and never end the loop.
func (s *Scraper) Run(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	if s.Interval <= 0 {
		return fmt.Errorf("dcgm scraper: interval %v is not positive", s.Interval)
	}
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	for {
		n, err := s.ScrapeOnce(ctx)
		s.logger().Debug("dcgm scrape round", "envelopes", n, "failed", err != nil)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// ScrapeOnce scrapes every target once (several at a time, each within Timeout) and publishes
// their envelopes in target order. It returns how many envelopes it published and the joined
// errors of the targets that failed, each already logged; envelopes a partly bad scrape still
// yields are published. When ctx ends during the round it returns ctx's error instead.
func (s *Scraper) ScrapeOnce(ctx context.Context) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	s.rounds.Add(1)
	targets := s.Targets()
	results := make([]scrapeResult, len(targets))
	sem := make(chan struct{}, maxParallel)
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = s.scrape(ctx, t)
		})
	}
	wg.Wait()

	published := 0
	var errs []error
	for i, r := range results {
		for _, env := range r.envs {
			s.Publish(env)
			published++
		}
		s.published.Add(uint64(len(r.envs)))
		if r.err == nil {
			s.scrapes.Add(1)
			continue
		}
		if ctx.Err() != nil {
			continue // shutting down: not the target's fault
		}
		s.failures.Add(1)
		s.logger().Warn("dcgm scrape failed", "url", targets[i].URL, "node", targets[i].Node,
			"envelopes", len(r.envs), "err", r.err)
		errs = append(errs, fmt.Errorf("scrape %s: %w", targets[i].URL, r.err))
	}
	if err := ctx.Err(); err != nil {
		return published, err
	}
	return published, errors.Join(errs...)
}

type scrapeResult struct {
	envs []*events.Envelope
	err  error
}

// scrape fetches and converts one target's metrics. occurred_at is the time the request was
// sent: dcgm-exporter serves the values its last DCGM poll cached, and writes no timestamps.
func (s *Scraper) scrape(ctx context.Context, t Target) scrapeResult {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	at := s.now()
	body, err := get(ctx, s.client(), t.URL, "text/plain;version=0.0.4")
	if err != nil {
		return scrapeResult{err: err}
	}
	samples, err := Parse(bytes.NewReader(body))
	if err != nil {
		return scrapeResult{err: err}
	}
	envs, err := EnvelopesEvery(s.Interval, samples, s.Cluster, s.Source, t.Node, at, s.now(), s.Resolver)
	return scrapeResult{envs: envs, err: err}
}

// get fetches url and returns its body, which must come with status 200 and fit in maxBody.
func get(ctx context.Context, client *http.Client, url, accept string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("body larger than %d bytes", maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		return body, &statusError{code: resp.StatusCode, body: body}
	}
	return body, nil
}

// statusError is an answer with a status other than 200; it keeps the body for callers that
// understand it (a Prometheus error object).
type statusError struct {
	code int
	body []byte
}

func (e *statusError) Error() string {
	b := bytes.TrimSpace(e.body)
	if len(b) > 200 {
		b = append(b[:200:200], "…"...)
	}
	if len(b) == 0 {
		return fmt.Sprintf("status %d", e.code)
	}
	return fmt.Sprintf("status %d: %s", e.code, b)
}

func (s *Scraper) check() error {
	switch {
	case s.Targets == nil:
		return errors.New("dcgm scraper: no Targets")
	case s.Publish == nil:
		return errors.New("dcgm scraper: no Publish")
	case s.Cluster == "" || s.Source == "":
		return errors.New("dcgm scraper: Cluster and Source are required")
	}
	return nil
}

func (s *Scraper) client() *http.Client {
	if s.Client == nil {
		return http.DefaultClient
	}
	return s.Client
}

func (s *Scraper) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func (s *Scraper) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock()
}
