// Package specfile reads the lab's YAML specs — the cluster spec, the experiment definition —
// strictly (a field the spec does not have is an error), from a file or from the copy embedded
// in the binary. What a spec holds and how it is checked stay with its package.
package specfile

import (
	"bytes"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Strict decodes the YAML (or JSON) document b into v; an unknown field is an error.
func Strict(b []byte, v any) error {
	return yaml.UnmarshalStrict(bytes.TrimSpace(b), v)
}

// Load reads the file at path with parse. Its errors name what the file is and, once it has
// been read, its path: "cluster spec: open …", "cluster spec x.yaml: no pools".
func Load[T any](what, path string, parse func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := os.ReadFile(path)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	v, err := parse(b)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return v, nil
}

// Embedded parses the spec embedded in the binary as name. One that does not parse is a broken
// build, so it panics; the package that embeds it covers it with a test.
func Embedded[T any](name string, b []byte, parse func([]byte) (T, error)) T {
	v, err := parse(b)
	if err != nil {
		panic(fmt.Sprintf("embedded %s: %v", name, err))
	}
	return v
}
