package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestMemorySmoke runs -memory with 200 pods: a collector child (this test binary, see
// TestMain) lists them from the fake API and publishes them to an in-process JetStream. It
// checks the figures are there and consistent, not how large they are.
func TestMemorySmoke(t *testing.T) {
	out := smoke(t, 3*time.Minute, "-memory", "-memory-pods", "200")
	for _, want := range []string{
		"with 200 pods in scope", "listed and published ", "collector RSS (VmRSS) when ready ", "peak (VmHWM) ",
		"after a GC ", "(target: peak ≤ 100.0 MB with 200 pods; 100 MB at 10k, 350 MB at 50k)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var r memoryReport
	lastJSON(t, out, &r)
	// One pod_status per pod, and the scope's inventory.
	if r.Published < 201 {
		t.Errorf("published %d envelopes; want at least 201 (200 pods and an inventory)", r.Published)
	}
	if r.PodLists+r.PodWatchLists == 0 {
		t.Error("the collector never asked the fake api for its pods")
	}
	if m := r.Collector; m.RSS <= 0 || m.Peak < m.RSS || m.Anon <= 0 || m.Anon > m.RSS {
		t.Errorf("collector memory %+v: want 0 < anon ≤ RSS ≤ peak", m)
	}
	if r.AfterGC.RSS <= 0 || r.Start.RSS <= 0 || r.Start.Anon > r.Collector.Anon {
		t.Errorf("after GC %+v, start %+v: want both measured, the start smaller", r.AfterGC, r.Start)
	}
}

// TestFakeAPI lists the fake API's pods with client-go, in pages as the API server serves them
// and in one list, and checks both give every pod once.
func TestFakeAPI(t *testing.T) {
	client, err := fakeCluster(30, "0badcafe")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newFakeAPI(t.Context(), client, memoryNamespace, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var paged []string
	opts := metav1.ListOptions{Limit: 7}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("the fake api never ends its pages")
		}
		list, err := cs.CoreV1().Pods(memoryNamespace).List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			paged = append(paged, p.Name)
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	whole, err := cs.CoreV1().Pods(memoryNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range whole.Items {
		names = append(names, p.Name)
		if p.UID == "" || p.Labels["schedlens.io/experiment"] == "" || !hasGPURequest(p.Spec.Containers[0].Resources.Requests) {
			t.Errorf("pod %s lacks its UID, experiment label or GPU request", p.Name)
		}
	}
	if len(names) != 30 {
		t.Errorf("listed %d pods, want 30", len(names))
	}
	if diff := cmp.Diff(names, paged); diff != "" {
		t.Errorf("paged list differs from the whole list (-whole +paged):\n%s", diff)
	}
	resp, err := http.Post(srv.URL+"/api/v1/namespaces/ai-lab/pods", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST answered %s, want 405", resp.Status)
	}
}

func hasGPURequest(l corev1.ResourceList) bool {
	_, ok := l["nvidia.com/gpu"]
	return ok
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestRecordedPodsCopy keeps the embedded pods equal to the recorded ones they copy.
func TestRecordedPodsCopy(t *testing.T) {
	orig, err := os.ReadFile("../../internal/kube/testdata/pods.list.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(orig, recordedPods) {
		t.Error("testdata/pods.list.json differs from internal/kube/testdata/pods.list.json: copy it again")
	}
}
