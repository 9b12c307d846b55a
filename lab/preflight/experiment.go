package preflight

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/schedlens/schedlens/lab/experiment"
)

// ExperimentManifests renders a lab experiment definition as the manifests its runner applies
// in one run: the experiment ConfigMap, then for each arm its ResourceClaim or
// ResourceClaimTemplate (DRA arms), its background pods (annotated with
// AnnotationGroup, so the dry run places them before the arm's pods, as the runner does) and
// its pods.
func ExperimentManifests(d *experiment.Definition, namespace string, run int) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# The pods lab/experiment's runner creates for %s, run %d (generated).\n", d.Name, run)
	cm, err := d.ConfigMap(namespace)
	if err != nil {
		return nil, err
	}
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	docs := []any{cm}
	for _, arm := range d.Arms {
		if claim, tpl := d.ClaimObjects(arm, namespace, run); claim != nil {
			docs = append(docs, claim)
		} else if tpl != nil {
			docs = append(docs, tpl)
		}
		bg, pods := d.Pods(arm, namespace, run)
		for _, p := range bg {
			p.Annotations[AnnotationGroup] = arm.Name
		}
		for _, p := range append(bg, pods...) {
			p.APIVersion, p.Kind = "v1", "Pod"
			docs = append(docs, p)
		}
	}
	for _, d := range docs {
		out, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		out = bytes.ReplaceAll(out, []byte("  creationTimestamp: null\n"), nil)
		out = bytes.ReplaceAll(out, []byte("status: {}\n"), nil)
		out = bytes.ReplaceAll(out, []byte("    resources: {}\n"), nil)
		b.WriteString("---\n")
		b.Write(out)
	}
	return b.Bytes(), nil
}
