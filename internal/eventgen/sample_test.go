package eventgen_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/schedlens/schedlens/internal/eventgen"
)

var update = flag.Bool("update", false, "rewrite testdata/sample.jsonl from eventgen.Default()")

const samplePath = "../../testdata/sample.jsonl"

// The replayed sample of the README's quick start is eventgen's default experiment; this test
// keeps the committed file in step (go test ./internal/eventgen -update rewrites it).
func TestSampleIsCurrent(t *testing.T) {
	var buf bytes.Buffer
	for _, env := range eventgen.Generate(eventgen.Default()) {
		buf.Write(env.Raw)
		buf.WriteByte('\n')
	}
	if *update {
		if err := os.WriteFile(samplePath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Errorf("%s is stale: run go test ./internal/eventgen -update", samplePath)
	}
}
