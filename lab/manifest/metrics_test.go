package manifest_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/testenv"
)

var metricName = regexp.MustCompile(`\bschedlens_[a-z0-9_]+\b`)

// usedMetrics returns, per PromQL expression of the dashboards and the chart's alerts, the
// schedlens metric names it reads.
func usedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for where, q := range dashboardQueries(t) {
		out[where+": "+q] = metricName.FindAllString(q, -1)
	}
	_, objs := render(t, scenarioNamed(t, "04-monitoring"), "schedlens", "schedlens")
	rules := 0
	for _, u := range objs {
		if u.GetKind() != "PrometheusRule" {
			continue
		}
		groups, _, _ := unstructuredSlice(u.Object, "spec", "groups")
		for _, g := range groups {
			for _, r := range g["rules"].([]any) {
				rule := r.(map[string]any)
				expr := fmt.Sprint(rule["expr"])
				out["alert "+fmt.Sprint(rule["alert"])+": "+expr] = metricName.FindAllString(expr, -1)
				rules++
			}
		}
	}
	if rules < 4 {
		t.Fatalf("the 04-monitoring scenario renders %d alert rules, want at least 4", rules)
	}
	return out
}

func unstructuredSlice(obj map[string]any, path ...string) ([]map[string]any, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[p]
	}
	list, ok := cur.([]any)
	if !ok {
		return nil, false, nil
	}
	var out []map[string]any
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, true, nil
}

var typeLine = regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`)

// exported scrapes a /metrics page into the names it can be queried by: each family's name, and
// for histograms and summaries their _bucket, _sum and _count series.
func exported(t *testing.T, url string, into map[string]bool) {
	t.Helper()
	code, body := httpGet(url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	for _, m := range typeLine.FindAllStringSubmatch(body, -1) {
		into[m[1]] = true
		if m[2] == "histogram" || m[2] == "summary" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				into[m[1]+suffix] = true
			}
		}
	}
}

// Every metric the Grafana dashboards and the PrometheusRule alerts read is exported by the
// binaries: the collector (run against the lab's API server, probing a pod), the correlator and
// the api (storing and serving what the collector published) are started for real and scraped,
// until each name has appeared (a labelled family shows only once it has a sample). For the
// api's workload metrics to have samples, a Deployment is scaled from 1 to 2 replicas while its
// one pod is Ready (a scale disruption, a workload below desired), and a pod asking for a GPU
// waits (no scheduler runs here).
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	used := usedMetrics(t)
	want := map[string]bool{}
	for expr, names := range used {
		if len(names) == 0 {
			t.Errorf("%s reads no schedlens metric", expr)
		}
		for _, n := range names {
			want[n] = true
		}
	}
	bin := binaries(t)
	nats := natstest.Start(t).URL()
	db := pgtest.URL(t)
	ctx := context.Background()

	// A pod in scope, Running on a loopback address, for the prober; an inference endpoint there.
	ns := "metrics"
	ensureNamespaces(t, ns)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer endpoint.Close()
	_, portText, _ := net.SplitHostPort(endpoint.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "model-0", Namespace: ns, Labels: map[string]string{"schedlens.io/experiment": "day20", "schedlens.io/arm": "control", "schedlens.io/run": "1"}},
		Spec:       corev1.PodSpec{NodeName: "gpu-node-1", Containers: []corev1.Container{{Name: "model", Image: "model:1"}}},
	}
	created, err := cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
	if _, err := cp.Client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	workloadsFound(t, ns)

	addrs := map[string]string{"collector": testenv.FreeAddr(t), "correlator": testenv.FreeAddr(t), "api": testenv.FreeAddr(t)}
	common := map[string]string{"SCHEDLENS_NATS_URL": nats, "SCHEDLENS_DATABASE_URL": db, "SCHEDLENS_LOG_FORMAT": "json"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range common {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	collector := start(t, bin+"/collector", with(map[string]string{"SCHEDLENS_METRICS_ADDR": addrs["collector"], "SCHEDLENS_NAMESPACES": ns,
		"SCHEDLENS_PROBE_PORT": strconv.Itoa(port), "SCHEDLENS_DCGM_INTERVAL": "0s"}), "run", "-kubeconfig", cp.Kubeconfig)
	correlator := start(t, bin+"/correlator", with(map[string]string{"SCHEDLENS_METRICS_ADDR": addrs["correlator"], "SCHEDLENS_BATCH_WAIT": "50ms"}), "serve")
	api := start(t, bin+"/api", with(map[string]string{"SCHEDLENS_HTTP_ADDR": addrs["api"], "SCHEDLENS_WORKLOAD_METRICS_INTERVAL": "1s"}))
	waitReady(t, "collector", "http://"+addrs["collector"]+"/readyz", collector)
	waitReady(t, "correlator", "http://"+addrs["correlator"]+"/readyz", correlator)
	waitReady(t, "api", "http://"+addrs["api"]+"/readyz", api)

	// The Deployment is scaled once its first state is stored (the api reads it).
	if !testenv.Until(30*time.Second, 200*time.Millisecond, func() bool {
		_, body := httpGet("http://" + addrs["api"] + "/v1/workloads?namespace=" + ns)
		return strings.Contains(body, `"name":"web","desired":1,"ready":1,"desired_observed":true`)
	}) {
		_, body := httpGet("http://" + addrs["api"] + "/v1/workloads?namespace=" + ns)
		t.Fatalf("the Deployment's first state never read: %s", body)
	}
	d, err := cp.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr(int32(2))
	if _, err := cp.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	var missing []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		httpGet("http://" + addrs["api"] + "/v1/stats")
		got := map[string]bool{}
		for _, a := range addrs {
			exported(t, "http://"+a+"/metrics", got)
		}
		missing = missing[:0]
		for n := range want {
			if !got[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(missing)
	for _, n := range missing {
		var where []string
		for expr, names := range used {
			if slices.Contains(names, n) {
				where = append(where, expr)
			}
		}
		slices.Sort(where)
		t.Errorf("%s is not exported by the binaries; used by:\n  %s", n, strings.Join(where, "\n  "))
	}
}

// workloadsFound creates in ns what the api's workload metrics report: the Deployment web (1
// replica) with one Ready pod of its ReplicaSet (no controllers run here: the pod is made as the
// ReplicaSet controller would), and a pod asking for a GPU that no scheduler places.
func workloadsFound(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}},
	}
	created, err := cp.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-5d4c7b9f8-x2x9z", Namespace: ns, Labels: map[string]string{"app": "web", "pod-template-hash": "5d4c7b9f8"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d4c7b9f8", UID: created.UID, Controller: ptr(true)}}},
		Spec: corev1.PodSpec{NodeName: "gpu-node-1", Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
	}
	p, err := cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
	if _, err := cp.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gpu := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "train", Image: "train:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}},
	}
	if _, err := cp.Client.CoreV1().Pods(ns).Create(ctx, gpu, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
