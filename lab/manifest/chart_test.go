package manifest_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedlens/schedlens/lab/manifest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const chartDir = "../../deploy/helm/schedlens"

// scenario is one values file of the chart's ci/ directory.
type scenario struct {
	name string // 01-default, …
	file string
}

func scenarios(t *testing.T) []scenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ci/*-values.yaml in %s: %v", chartDir, err)
	}
	var out []scenario
	for _, f := range files {
		out = append(out, scenario{name: strings.TrimSuffix(filepath.Base(f), "-values.yaml"), file: f})
	}
	return out
}

// scenarioNamed is the chart's ci/ scenario name (its file without -values.yaml).
func scenarioNamed(t *testing.T, name string) scenario {
	t.Helper()
	for _, s := range scenarios(t) {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no %s scenario in the chart's ci/", name)
	return scenario{}
}

// render renders the chart for a scenario as release r in namespace ns.
func render(t *testing.T, s scenario, release, ns string) (string, []*unstructured.Unstructured) {
	t.Helper()
	out, err := manifest.Template(chartDir, manifest.Release{Name: release, Namespace: ns, ValuesFiles: []string{s.file}})
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	objs, err := manifest.Decode([]byte(out))
	if err != nil {
		t.Fatalf("%s: rendered manifest: %v", s.name, err)
	}
	return out, objs
}

// The rendered manifests of every scenario are the golden files (go test ./manifest -update
// rewrites them after a deliberate change; review the diff).
func TestChartGolden(t *testing.T) {
	for _, s := range scenarios(t) {
		t.Run(s.name, func(t *testing.T) {
			got, _ := render(t, s, "schedlens", "schedlens")
			path := filepath.Join("testdata", "golden", s.name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-golden +rendered):\n%s", path, diff)
			}
		})
	}
}

func TestChartLint(t *testing.T) {
	if err := manifest.Lint(chartDir, manifest.Release{Name: "schedlens", Namespace: "schedlens"}); err != nil {
		t.Error(err)
	}
	for _, s := range scenarios(t) {
		if err := manifest.Lint(chartDir, manifest.Release{Name: "schedlens", Namespace: "schedlens", ValuesFiles: []string{s.file}}); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

// Values the chart refuses render nothing and say why.
func TestChartRefusesIncompleteRBAC(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"rbac": map[string]any{"useClusterRole": false}}, "needs collector.namespaces"},
		{map[string]any{"rbac": map[string]any{"useClusterRole": false}, "collector": map[string]any{"namespaces": []any{"a"}}}, "needs collector.dcgm.namespace"},
		{map[string]any{"auth": map[string]any{"mode": "token"}}, "auth.mode=token needs auth.tokenSecret.name"},
		{map[string]any{"auth": map[string]any{"mode": "oauth"}}, `auth.mode "oauth": want none, token or kubernetes`},
		{map[string]any{"auth": map[string]any{"mode": "kubernetes", "metrics": true}, "serviceMonitor": map[string]any{"enabled": true}}, "needs serviceMonitor.authorization"},
	} {
		_, err := manifest.Template(chartDir, manifest.Release{Name: "x", Namespace: "x", Values: c.values})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %v: err %v, want %q", c.values, err, c.want)
		}
	}
}

// podSpecs returns the pod templates of the workloads among objs.
func podSpecs(t *testing.T, objs []*unstructured.Unstructured) map[string]corev1.PodSpec {
	t.Helper()
	out := map[string]corev1.PodSpec{}
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			fromUnstructured(t, u, &d)
			out[u.GetKind()+"/"+u.GetName()] = d.Spec.Template.Spec
		case "StatefulSet":
			var s appsv1.StatefulSet
			fromUnstructured(t, u, &s)
			out[u.GetKind()+"/"+u.GetName()] = s.Spec.Template.Spec
		case "DaemonSet", "Job", "CronJob", "Pod", "ReplicaSet":
			t.Errorf("unexpected workload kind %s/%s: check its security here", u.GetKind(), u.GetName())
		}
	}
	return out
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// Every container of every scenario runs as non-root with a read-only root filesystem, no
// privilege escalation, no capabilities and the RuntimeDefault seccomp profile; schedlens'
// containers have /healthz and /readyz probes; the collector's roles only list and watch, the
// api's callers' only get (and create, to write) its resource, or get pods in a namespace.
func TestChartSecurity(t *testing.T) {
	for _, s := range scenarios(t) {
		_, objs := render(t, s, "schedlens", "schedlens")
		specs := podSpecs(t, objs)
		if len(specs) < 3 {
			t.Fatalf("%s: %d workloads rendered, want the collector, correlator and api at least", s.name, len(specs))
		}
		for name, spec := range specs {
			where := s.name + " " + name
			psc := spec.SecurityContext
			if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("%s: pod seccomp profile is not RuntimeDefault", where)
			}
			for _, c := range spec.Containers {
				sc := c.SecurityContext
				nonRoot := (sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
				uid := psc.RunAsUser
				if sc != nil && sc.RunAsUser != nil {
					uid = sc.RunAsUser
				}
				switch {
				case !nonRoot || uid == nil || *uid == 0:
					t.Errorf("%s/%s: may run as root (runAsNonRoot %v, runAsUser %v)", where, c.Name, nonRoot, uid)
				case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
					t.Errorf("%s/%s: root filesystem is writable", where, c.Name)
				case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
					t.Errorf("%s/%s: privilege escalation allowed", where, c.Name)
				case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
					t.Errorf("%s/%s: capabilities %v, want drop [ALL]", where, c.Name, sc.Capabilities)
				}
				if len(c.Command) == 0 || !strings.HasPrefix(c.Command[0], "/usr/local/bin/") {
					continue // quickstart's NATS and Postgres: their own images' entrypoints
				}
				if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" ||
					c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
					t.Errorf("%s/%s: want readiness on /readyz and liveness on /healthz", where, c.Name)
				}
			}
		}
		for _, u := range objs {
			if u.GetKind() != "ClusterRole" && u.GetKind() != "Role" {
				continue
			}
			var r rbacv1.ClusterRole
			fromUnstructured(t, u, &r)
			// auth.mode=kubernetes: the roles callers are bound to, granting only the api's
			// resource (get: read; get and create: write), nothing of the cluster.
			if role, ok := strings.CutPrefix(u.GetName(), "schedlens-"); ok && (role == "read" || role == "write") {
				want := map[string][]string{"read": {"get"}, "write": {"get", "create"}}[role]
				if len(r.Rules) != 1 || !slices.Equal(r.Rules[0].APIGroups, []string{"schedlens.io"}) ||
					!slices.Equal(r.Rules[0].Resources, []string{"experiments"}) || !slices.Equal(r.Rules[0].Verbs, want) {
					t.Errorf("%s ClusterRole %s: rules %+v, want %v on experiments.schedlens.io only", s.name, u.GetName(), r.Rules, want)
				}
				continue
			}
			// What reading a namespace needs (auth.kubernetes.scope), bound per namespace: get
			// on pods by default, nothing else.
			if u.GetName() == "schedlens-read-namespace" {
				if len(r.Rules) != 1 || !slices.Equal(r.Rules[0].APIGroups, []string{""}) ||
					!slices.Equal(r.Rules[0].Resources, []string{"pods"}) || !slices.Equal(r.Rules[0].Verbs, []string{"get"}) {
					t.Errorf("%s ClusterRole %s: rules %+v, want get on pods only", s.name, u.GetName(), r.Rules)
				}
				continue
			}
			for _, rule := range r.Rules {
				if !slices.Equal(rule.Verbs, []string{"list", "watch"}) {
					t.Errorf("%s %s %s: verbs %v on %v, want only list and watch", s.name, u.GetKind(), u.GetName(), rule.Verbs, rule.Resources)
				}
			}
		}
	}
}

// The image is pinned by digest when one is given, and named registry/repository:tag.
func TestChartImageReference(t *testing.T) {
	for _, c := range []struct {
		values map[string]any
		want   string
	}{
		{nil, "ghcr.io/schedlens/schedlens:0.1.0"},
		{map[string]any{"image": map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)}}, "ghcr.io/schedlens/schedlens:0.1.0@sha256:" + strings.Repeat("ab", 32)},
		{map[string]any{"global": map[string]any{"imageRegistry": "mirror.local"}, "image": map[string]any{"tag": "dev"}}, "mirror.local/schedlens/schedlens:dev"},
	} {
		out, err := manifest.Template(chartDir, manifest.Release{Name: "x", Namespace: "x", Values: c.values})
		if err != nil {
			t.Fatal(err)
		}
		objs, _ := manifest.Decode([]byte(out))
		for name, spec := range podSpecs(t, objs) {
			if got := spec.Containers[0].Image; got != c.want {
				t.Errorf("values %v: %s image %q, want %q", c.values, name, got, c.want)
			}
		}
	}
}

// scenarioNamespaces are the namespaces a scenario's objects live in or refer to.
func scenarioNamespaces(objs []*unstructured.Unstructured, release string) []string {
	set := map[string]bool{release: true}
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" {
			set[ns] = true
		}
	}
	var out []string
	for ns := range set {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// ensureNamespaces creates the namespaces (as the cluster's admin would, before helm install).
func ensureNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, ns := range names {
		_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("namespace %s: %v", ns, err)
		}
	}
}

// crds are prometheus-operator's ServiceMonitor and PrometheusRule definitions (testdata/crds,
// from prometheus-operator v0.93.1), so the API server validates those objects by their schema.
func crds(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	files, _ := filepath.Glob("testdata/crds/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := manifest.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, objs...)
	}
	if len(out) != 2 {
		t.Fatalf("want the ServiceMonitor and PrometheusRule CRDs in testdata/crds, found %d objects", len(out))
	}
	return out
}

// installScenario renders a scenario as release name (in namespace name) and applies it to the
// lab's API server, which validates every object (strict field validation).
func installScenario(t *testing.T, s scenario, name string) []*unstructured.Unstructured {
	t.Helper()
	_, objs := render(t, s, name, name)
	ensureNamespaces(t, scenarioNamespaces(objs, name)...)
	a, err := manifest.NewApplier(cp.REST)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(context.Background(), append(crds(t), objs...), name); err != nil {
		t.Fatalf("%s: the API server refused: %v", s.name, err)
	}
	return objs
}

// Every scenario's objects pass the real API server's validation.
func TestChartAppliesToAPIServer(t *testing.T) {
	for i, s := range scenarios(t) {
		t.Run(s.name, func(t *testing.T) {
			objs := installScenario(t, s, fmt.Sprintf("apply-%02d", i+1))
			var kinds []string
			for _, u := range objs {
				kinds = append(kinds, u.GetKind())
			}
			for _, want := range []string{"Deployment", "Service", "ServiceAccount"} {
				if !slices.Contains(kinds, want) {
					t.Errorf("no %s rendered (kinds %v)", want, kinds)
				}
			}
		})
	}
}
