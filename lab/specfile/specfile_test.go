package specfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedlens/schedlens/lab/specfile"
)

type spec struct {
	Name string `json:"name"`
}

func parse(b []byte) (*spec, error) {
	var s spec
	if err := specfile.Strict(b, &s); err != nil {
		return nil, err
	}
	if s.Name == "" {
		return nil, errors.New("name missing")
	}
	return &s, nil
}

// A spec is read strictly; errors say what the file is, and its path once it was read.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if s, err := specfile.Load("test spec", write("good.yaml", "\n  name: a\n\n"), parse); err != nil || s.Name != "a" {
		t.Errorf("good spec: %+v, %v", s, err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "absent.yaml"), "test spec: open " + filepath.Join(dir, "absent.yaml")},
		{write("unknown.yaml", "name: a\nnmae: b"), "test spec " + filepath.Join(dir, "unknown.yaml") + `: error unmarshaling JSON: while decoding JSON: json: unknown field "nmae"`},
		{write("empty.yaml", ""), "test spec " + filepath.Join(dir, "empty.yaml") + ": name missing"},
	} {
		if s, err := specfile.Load("test spec", tc.path, parse); err == nil || !strings.HasPrefix(err.Error(), tc.want) || s != nil {
			t.Errorf("%s: %v, %v; want an error starting %q", tc.path, s, err, tc.want)
		}
	}
}

// An embedded spec that does not parse panics, naming the file.
func TestEmbedded(t *testing.T) {
	if s := specfile.Embedded("good.yaml", []byte("name: a"), parse); s.Name != "a" {
		t.Errorf("embedded: %+v", s)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "embedded bad.yaml: name missing") {
			t.Errorf("recovered %v; want a panic naming bad.yaml", r)
		}
	}()
	specfile.Embedded("bad.yaml", []byte("{}"), parse)
}
