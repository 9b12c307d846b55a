package importer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/importer"
	"github.com/schedlens/schedlens/internal/ingest"
)

// BenchmarkImport imports 20,000 NDJSON results per iteration through the real pipeline (in
// process: JetStream, correlator, Postgres, the API's handler), with the read-back and without
// it (-wait 0, then waiting for the store directly), and reports results per second of each and
// the time the pre-import lookup took. Run: go test ./internal/importer -run '^$' -bench Import -benchtime 1x
func BenchmarkImport(b *testing.B) {
	const n = 20000
	p := newPipeline(b, true)
	p.pods()
	rowsFor := func(iter int) []ingest.Result {
		var sb strings.Builder
		for i := range n {
			ip := []string{"127.0.10.1", "127.0.10.2"}[i%2]
			fmt.Fprintf(&sb, `{"pod_ip":%q,"sent_at":%q,"latency_ms":%d,"status":200}`+"\n", ip,
				t0.Add(time.Duration(iter)*time.Hour+time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), 1+i%50)
		}
		results, _, err := ingest.Parse(ingest.FormatNDJSON, strings.NewReader(sb.String()), ingest.Options{Cluster: "lab"})
		if err != nil || len(results) != n {
			b.Fatalf("parse: %v, %d results", err, len(results))
		}
		return results
	}
	ctx := context.Background()
	var withReadBack, lookup, without time.Duration
	for i := range b.N {
		results := rowsFor(2 * i)
		ids := make([]string, 0, 2*n)
		for _, r := range results {
			ids = append(ids, r.Envelope.ID, r.LegacyID)
		}
		start := time.Now()
		if _, err := p.client.Lookup(ctx, ids); err != nil {
			b.Fatal(err)
		}
		lookup += time.Since(start)

		start = time.Now()
		r, err := importer.Run(ctx, importer.Config{Cluster: "lab", Wait: time.Minute, Poll: 100 * time.Millisecond}, results, 0, p.publish, p.client.Lookup)
		if err != nil || r.StoredNew != n || r.Attributed != n {
			b.Fatalf("import: %v %+v", err, r)
		}
		withReadBack += time.Since(start)

		before, _ := p.DB.Stats(ctx)
		more := rowsFor(2*i + 1)
		start = time.Now()
		if _, err := importer.Run(ctx, importer.Config{Cluster: "lab"}, more, 0, p.publish, p.client.Lookup); err != nil {
			b.Fatal(err)
		}
		for st, _ := p.DB.Stats(ctx); st.ByKind["request"] < before.ByKind["request"]+n; st, _ = p.DB.Stats(ctx) {
			time.Sleep(20 * time.Millisecond)
		}
		without += time.Since(start)
	}
	per := func(d time.Duration) float64 { return float64(n*b.N) / d.Seconds() }
	b.ReportMetric(per(withReadBack), "results/s_read_back")
	b.ReportMetric(per(without), "results/s_no_read_back")
	b.ReportMetric(lookup.Seconds()/float64(b.N), "s_lookup_40k_ids")
	b.Logf("%d results: %.0f/s with the read-back, %.0f/s publishing and polling the store directly (ratio %.2f); looking up %d ids took %s",
		n, per(withReadBack), per(without), per(withReadBack)/per(without), 2*n, lookup/time.Duration(b.N))
}
