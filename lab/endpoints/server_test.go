package endpoints_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/lab/endpoints"
	"github.com/schedlens/schedlens/lab/sim"
)

// client keeps no idle connections, so that it leaves no goroutines behind.
var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

type reply struct {
	status  int
	headers map[string]string
	body    map[string]any
}

func post(t *testing.T, url string) reply {
	t.Helper()
	resp, err := client.Post(url, "application/json", strings.NewReader(`{"inputs":[]}`))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, headers: map[string]string{}}
	for _, h := range []string{"X-Pod-Name", "X-Pod-UID", "X-Node", "Content-Type"} {
		r.headers[h] = resp.Header.Get(h)
	}
	if err := json.Unmarshal(b, &r.body); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return r
}

func TestInferenceLifecycle(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	cfg := testConfig(t)
	ip := loopbackIP()
	pod := sim.Pod{
		Namespace: "ns", Name: "infer-0", UID: "uid-0", Node: "node-a", IP: ip, Container: "server",
		GPUModel: h100, GPUIndex: 0, GPUUUID: "GPU-0", Sharing: "exclusive", Sharers: 1,
	}
	src.setPod(pod)
	start(t, src, cfg)
	target := addr(ip, cfg.Port)
	url := "http://" + target + "/v2/models/model/infer"
	headers := map[string]string{"X-Pod-Name": "infer-0", "X-Pod-UID": "uid-0", "X-Node": "node-a", "Content-Type": "application/json"}

	time.Sleep(5 * cfg.Reconcile)
	if !refused(target) {
		t.Fatal("a pod that is not running accepts connections")
	}

	pod.Running, pod.Loading = true, true
	src.setPod(pod)
	eventually(t, "the listener of a running pod", func() bool { return !refused(target) })
	want := reply{status: 503, headers: headers, body: map[string]any{"error": "model not ready", "pod": "infer-0"}}
	if diff := cmp.Diff(want, post(t, url), cmp.AllowUnexported(reply{})); diff != "" {
		t.Errorf("running, not ready (-want +got):\n%s", diff)
	}
	want = reply{status: 404, headers: headers, body: map[string]any{"error": "not found", "pod": "infer-0"}}
	if diff := cmp.Diff(want, post(t, "http://"+target+"/v2/models/other/infer"), cmp.AllowUnexported(reply{})); diff != "" {
		t.Errorf("other path (-want +got):\n%s", diff)
	}

	// Ready is served at once, without waiting for a reconcile
	pod.Loading, pod.Ready = false, true
	src.setPod(pod)
	got := post(t, url)
	if got.status != 200 || got.headers["X-Pod-Name"] != "infer-0" || got.headers["X-Node"] != "node-a" {
		t.Errorf("ready: status %d headers %v, want 200 from infer-0 on node-a", got.status, got.headers)
	}
	delete(got.body, "latency_ms")
	wantBody := map[string]any{"model": "model", "pod": "infer-0", "namespace": "ns", "node": "node-a", "gpu": h100, "sharing": "exclusive"}
	if diff := cmp.Diff(wantBody, got.body); diff != "" {
		t.Errorf("ready body (-want +got):\n%s", diff)
	}

	pod.Running, pod.Ready = false, false
	src.setPod(pod)
	eventually(t, "the listener of a stopped pod to close", func() bool { return refused(target) })

	pod.Running, pod.Ready = true, true
	src.setPod(pod)
	eventually(t, "the listener of a restarted pod", func() bool { return !refused(target) })
	if got := post(t, url); got.status != 200 {
		t.Errorf("restarted and ready: status %d, want 200", got.status)
	}
	src.removePod(pod.UID)
	eventually(t, "the listener of a removed pod to close", func() bool { return refused(target) })
}

func TestNotReadyAnswersQuickly(t *testing.T) {
	t.Parallel()
	src := &fakeSource{}
	cfg := testConfig(t)
	ip := loopbackIP()
	// a pod whose requests would take 4 s if it were Ready
	src.setPod(sim.Pod{Namespace: "ns", Name: "slow", UID: "uid-slow", Node: "n", IP: ip, Running: true, Loading: true,
		GPUModel: t4, Sharing: "time-slicing", Sharers: 50})
	start(t, src, cfg)
	target := addr(ip, cfg.Port)
	eventually(t, "the listener", func() bool { return !refused(target) })
	t0 := time.Now()
	if got := post(t, "http://"+target+"/v2/models/model/infer"); got.status != 503 {
		t.Fatalf("status %d, want 503", got.status)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("a not-ready pod took %v to answer, want a few ms", d)
	}
}

func TestRunClosesEverythingOnCancel(t *testing.T) {
	// not parallel: it counts goroutines
	baseline := runtime.NumGoroutine()
	src := &fakeSource{}
	cfg := testConfig(t)
	podIP, nodeIP := loopbackIP(), loopbackIP()
	src.setNode(sim.Node{Name: "node-t4", IP: nodeIP, Ready: true, GPUModel: t4,
		GPUs: []sim.GPU{{Index: 0, UUID: "GPU-t4", MemoryMiB: 15360}}})
	// 50 time-sliced sharers on a T4: a request takes about 4 s
	src.setPod(sim.Pod{Namespace: "ns", Name: "slow", UID: "uid-slow", Node: "node-t4", IP: podIP, Running: true, Ready: true,
		GPUModel: t4, Sharing: "time-slicing", Sharers: 50})
	stop := start(t, src, cfg)
	podAddr, nodeAddr := addr(podIP, cfg.Port), addr(nodeIP, cfg.DCGMPort)
	eventually(t, "both listeners", func() bool { return !refused(podAddr) && !refused(nodeAddr) })

	errc := make(chan error, 1)
	go func() {
		resp, err := client.Post("http://"+podAddr+"/v2/models/model/infer", "application/json", nil)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		errc <- err
	}()
	eventually(t, "the request to be in flight", func() bool { return gpuUtil(t, nodeAddr) > 0 })

	t0 := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Run returned %v after cancel, while a 4 s request was in flight", d)
	}
	select {
	case err := <-errc:
		t.Logf("in-flight request ended with %v", err)
	case <-time.After(2 * time.Second):
		t.Error("the in-flight request was still running 2 s after Run returned")
	}
	for _, a := range []string{podAddr, nodeAddr} {
		if !refused(a) {
			t.Errorf("%s still accepts connections after Run returned", a)
		}
	}
	eventually(t, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= baseline })
}

func TestRunOnce(t *testing.T) {
	t.Parallel()
	srv := endpoints.New(&fakeSource{}, testConfig(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := srv.Run(ctx); err != nil {
		t.Fatalf("first Run: %v", err)
	}
	if err := srv.Run(ctx); err == nil {
		t.Error("second Run returned nil, want an error")
	}
}
