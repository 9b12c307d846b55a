package manifest

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint/support"
)

// KubeVersion is the Kubernetes version charts are rendered for: the lab's.
const KubeVersion = "v1.37.2"

// Release names a rendering of a chart: what `helm template NAME CHART -n NAMESPACE -f FILES`
// is given.
type Release struct {
	Name, Namespace string
	// ValuesFiles are merged in order, then Values on top (like --set).
	ValuesFiles []string
	Values      map[string]any
}

// values merges the release's values files and values.
func (r Release) values() (map[string]any, error) {
	out := map[string]any{}
	for _, f := range r.ValuesFiles {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return nil, fmt.Errorf("values %s: %w", f, err)
		}
		out = chartutil.CoalesceTables(v.AsMap(), out)
	}
	if r.Values != nil {
		out = chartutil.CoalesceTables(deepCopy(r.Values), out)
	}
	return out, nil
}

// Template renders the chart in dir as `helm template` does (client-only: lookup finds nothing)
// and returns the manifest.
func Template(dir string, r Release) (string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("load chart %s: %w", dir, err)
	}
	vals, err := r.values()
	if err != nil {
		return "", err
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return "", err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun, install.ClientOnly, install.Replace, install.IncludeCRDs = true, true, true, true
	install.ReleaseName, install.Namespace, install.KubeVersion = r.Name, r.Namespace, kv
	rel, err := install.Run(ch, vals)
	if err != nil {
		return "", fmt.Errorf("render %s: %w", dir, err)
	}
	return rel.Manifest, nil
}

// Lint runs Helm's linter (strict: warnings count) on the chart in dir with the release's
// values, and returns its findings above INFO as one error.
func Lint(dir string, r Release) error {
	vals, err := r.values()
	if err != nil {
		return err
	}
	l := action.NewLint()
	l.Strict, l.Namespace = true, r.Namespace
	l.KubeVersion, _ = chartutil.ParseKubeVersion(KubeVersion)
	res := l.Run([]string{dir}, vals)
	var msgs []string
	for _, m := range res.Messages {
		if m.Severity > support.InfoSev {
			msgs = append(msgs, m.Error())
		}
	}
	for _, e := range res.Errors {
		if !strings.Contains(strings.Join(msgs, "\n"), e.Error()) {
			msgs = append(msgs, e.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("helm lint %s: %s", dir, strings.Join(msgs, "; "))
	}
	return nil
}

func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = deepCopy(sub)
		}
		out[k] = v
	}
	return out
}
