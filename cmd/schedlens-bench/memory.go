package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/schedlens/schedlens/internal/bus"
	"github.com/schedlens/schedlens/internal/collector"
	"github.com/schedlens/schedlens/internal/collectorapp"
	"github.com/schedlens/schedlens/internal/config"
)

// targetCollectorRSS is the memory run's target, printed beside the figure (not asserted):
// issue 27's peak RSS ≤ 100 MB with 10k pods in scope and ≤ 350 MB with 50k, in bytes; 100 MB
// below 10k, on the line between the two up to 50k, in proportion above.
func targetCollectorRSS(pods int) int64 {
	switch {
	case pods <= 10_000:
		return 100_000_000
	case pods <= 50_000:
		return 100_000_000 + int64(pods-10_000)*250_000_000/40_000
	default:
		return int64(pods) * 350_000_000 / 50_000
	}
}

// memoryNamespace is the namespace of every generated pod: the collector's one scope.
const memoryNamespace = "ai-lab"

// recordedPods are the 13 pods of internal/kube/testdata/pods.list.json (a byte-for-byte copy:
// recorded from a real kube-apiserver, managedFields included), the shapes the run clones.
//
//go:embed testdata/pods.list.json
var recordedPods []byte

// memoryOptions are the flags of the memory run (-memory).
type memoryOptions struct {
	enabled     bool
	pods        int
	heapProfile string
	memLimit    string
}

func (m *memoryOptions) define(fs *config.FlagSet) {
	fs.BoolVar(&m.enabled, "memory", false, "instead of the throughput runs: run a collector (child process) against a fake clientset holding -memory-pods recorded-shape pods, publishing to JetStream, and print its RSS once it has listed and published everything")
	fs.Int(&m.pods, "memory-pods", "", 10_000, "pods in the collector's scope for -memory")
	fs.String(&m.heapProfile, "memory-heap-profile", "", "", "with -memory: write the collector child's heap profile (go tool pprof) to this file once it is ready and has collected garbage")
	fs.String(&m.memLimit, "memory-gomemlimit", "", "", "with -memory: GOMEMLIMIT for the collector child only (e.g. 96MiB), to see what a soft memory limit does to its RSS (default: the environment's)")
}

// memoryReport is everything the memory run prints, also as JSON with -json.
type memoryReport struct {
	Pods      int     `json:"pods"`
	Published int     `json:"published"`
	ReadyIn   float64 `json:"ready_seconds"`
	// Collector is the collector's memory when it had listed and published everything (its VmHWM
	// covers the whole run); AfterGC once it then ran a garbage collection and returned the free
	// memory to the OS, as its runtime does by itself within a few minutes (a forced GC every 2
	// minutes, then the scavenger): the steady state with the pods in its cache.
	Collector procMemory `json:"collector_process"`
	AfterGC   procMemory `json:"after_gc"`
	// LiveHeap is the Go heap in use after that GC (runtime.MemStats.HeapAlloc): what the
	// collector holds, the informer caches above all.
	LiveHeap int64 `json:"live_heap_bytes"`
	// Start is the child's memory before it built anything: the runtime and the executable.
	Start procMemory `json:"start"`
	// PodLists and PodWatchLists are how the collector asked for the pods: list pages, or
	// watch-lists.
	PodLists      int64  `json:"pod_list_pages"`
	PodWatchLists int64  `json:"pod_watch_lists"`
	GoMemLimit    string `json:"gomemlimit,omitempty"`
	Target        int64  `json:"target_rss_bytes"`
	HeapProfile   string `json:"heap_profile,omitempty"`
}

// runMemory is the -memory mode: see memoryOptions.define and docs/architecture.md#memory.
func runMemory(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.memory.pods <= 0 {
		return config.Usagef("-memory-pods must be positive, got %d", o.memory.pods)
	}
	logger, err := o.log.Logger(stderr, "bench")
	if err != nil {
		return err
	}
	natsURL, stopNATS, err := natsOrLocal(o.natsURL)
	if err != nil {
		return err
	}
	defer stopNATS()
	if o.natsURL != "" {
		// Leave nothing behind on an external server.
		defer func() {
			nc, err := bus.Connect(natsURL, "schedlens-bench-memory", logger)
			if err != nil {
				return
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if s, err := js.Stream(ctx, bus.StreamName); err == nil {
				purgeCluster(s, lagCluster, logger)
			}
		}()
	}
	client, err := fakeCluster(o.memory.pods, randomHex(4))
	if err != nil {
		return err
	}
	fapi, err := newFakeAPI(ctx, client, memoryNamespace, logger.With("component", "fake-api"))
	if err != nil {
		return err
	}
	apiCtx, stopAPI := context.WithCancel(ctx)
	defer stopAPI()
	apiURL, err := fapi.serve(apiCtx)
	if err != nil {
		return err
	}
	logger.Info("fake api serving the fake clientset's pods", "pods", o.memory.pods, "url", apiURL)
	args := []string{"-nats-url", natsURL, "-api-url", apiURL, "-pods", strconv.Itoa(o.memory.pods), "-log-level", o.log.Level}
	if o.memory.heapProfile != "" {
		args = append(args, "-heap-profile", o.memory.heapProfile)
	}
	start := time.Now()
	var env []string
	if o.memory.memLimit != "" {
		env = []string{"GOMEMLIMIT=" + o.memory.memLimit}
	}
	dir, err := os.MkdirTemp("", "schedlens-bench-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	exe, err := freshExecutable(dir)
	if err != nil {
		return err
	}
	c, err := startChildFrom(exe, childCollector, args, env, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if err := c.stop(); err != nil {
			logger.Warn("collector child", "error", err)
		}
	}()
	r := memoryReport{Pods: o.memory.pods, Target: targetCollectorRSS(o.memory.pods), HeapProfile: o.memory.heapProfile, GoMemLimit: o.memory.memLimit}
	line, err := c.expect(ctx, "baseline ", 5*time.Minute)
	if err != nil {
		return err
	}
	if _, err := fmt.Sscan(line, &r.Start.RSS, &r.Start.Anon); err != nil {
		return fmt.Errorf("collector child said %q: %w", line, err)
	}
	if line, err = c.expect(ctx, "ready ", 10*time.Minute); err != nil {
		return err
	}
	r.ReadyIn = time.Since(start).Seconds()
	if r.Published, err = strconv.Atoi(line); err != nil {
		return fmt.Errorf("collector child said %q: %w", line, err)
	}
	if r.Collector, err = readProcMemory(c.pid()); err != nil {
		return err
	}
	if err := c.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return fmt.Errorf("ask the collector child to collect garbage: %w", err)
	}
	if line, err = c.expect(ctx, "collected ", time.Minute); err != nil {
		return err
	}
	if r.LiveHeap, err = strconv.ParseInt(line, 10, 64); err != nil {
		return fmt.Errorf("collector child said %q: %w", line, err)
	}
	if r.AfterGC, err = readProcMemory(c.pid()); err != nil {
		return err
	}
	r.PodLists, r.PodWatchLists = fapi.podLists.Load(), fapi.podWatchLists.Load()
	r.print(stdout)
	if o.json {
		if err := json.NewEncoder(stdout).Encode(r); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}

func (r memoryReport) print(w io.Writer) {
	fmt.Fprintf(w, "schedlens-bench -memory: a collector (child process, collectorapp as `collector run`) with %d pods in scope, publishing to JetStream\n", r.Pods)
	fmt.Fprintf(w, "  listed and published %d envelopes (acknowledged by JetStream) in %.1f s\n", r.Published, r.ReadyIn)
	if r.GoMemLimit != "" {
		fmt.Fprintf(w, "  the collector child ran with GOMEMLIMIT=%s\n", r.GoMemLimit)
	}
	fmt.Fprintf(w, "  the pods came from the bench's fake clientset over HTTP (%d watch-lists, %d list pages)\n", r.PodWatchLists, r.PodLists)
	fmt.Fprintf(w, "  collector RSS (VmRSS) when ready %s  peak (VmHWM) %s  after a GC %s  (target: peak ≤ %s with %d pods; 100 MB at 10k, 350 MB at 50k)\n",
		mb(r.Collector.RSS), mb(r.Collector.Peak), mb(r.AfterGC.RSS), mb(r.Target), r.Pods)
	fmt.Fprintf(w, "    anonymous (RssAnon: heap, stacks) when ready %s, after a GC %s; at start, before anything was built: VmRSS %s, RssAnon %s (the rest is the bench executable's pages)\n",
		mb(r.Collector.Anon), mb(r.AfterGC.Anon), mb(r.Start.RSS), mb(r.Start.Anon))
	fmt.Fprintf(w, "    Go heap in use after the GC %s (%.0f bytes per pod)\n", mb(r.LiveHeap), float64(r.LiveHeap)/float64(max(r.Pods, 1)))
	fmt.Fprintf(w, "    after a GC: what the collector's runtime reaches by itself within minutes (a forced GC every 2 min, then the scavenger) when nothing changes\n")
	if r.HeapProfile != "" {
		fmt.Fprintf(w, "  heap profile of the collector child: %s (go tool pprof -sample_index=inuse_space %s)\n", r.HeapProfile, r.HeapProfile)
	}
}

// memoryPods returns n pods cloned from the recorded ones, round robin, each with its own name
// and UID (drawn from seed), in namespace memoryNamespace with the experiment labels.
func memoryPods(n int, seed string) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := json.Unmarshal(recordedPods, &list); err != nil {
		return nil, fmt.Errorf("read the recorded pods: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no recorded pods")
	}
	out := make([]*corev1.Pod, n)
	for i := range out {
		p := list.Items[i%len(list.Items)].DeepCopy()
		p.Namespace = memoryNamespace
		p.Name = fmt.Sprintf("%s-%05d", p.Name, i)
		p.UID = types.UID(fmt.Sprintf("%08s-0000-4000-8000-%012x", seed, i))
		p.ResourceVersion = strconv.Itoa(1000 + i)
		p.Labels["schedlens.io/run"] = strconv.Itoa(1 + i/1000)
		out[i] = p
	}
	return out, nil
}

// runCollectorChild is the collector child of -memory: it runs collectorapp (as `collector run`
// does) against the bench's fake API and says "ready <published>" once every
// informer has listed and the publisher holds nothing unacknowledged.
func runCollectorChild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newChildFlags(childCollector, stderr)
	var (
		natsURL, apiURL, heapProfile string
		n                            int
	)
	fs.StringVar(&natsURL, "nats-url", "", "")
	fs.StringVar(&apiURL, "api-url", "", "")
	fs.IntVar(&n, "pods", 0, "")
	fs.StringVar(&heapProfile, "heap-profile", "", "")
	logger, err := fs.parse(args)
	if err != nil {
		return err
	}
	start, err := readProcMemory(0)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "baseline %d %d\n", start.RSS, start.Anon)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: apiURL, UserAgent: "schedlens-collector", QPS: 50, Burst: 100})
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg := collector.DefaultConfig()
	cfg.Cluster, cfg.Source, cfg.Namespaces = lagCluster, "collector/bench", []string{memoryNamespace}
	// The recorded pods have cluster IPs (10.244.x): never probe or scrape them from here.
	cfg.Probe.Interval, cfg.DCGM.Interval = 0, 0
	app, err := collectorapp.New(collectorapp.Options{NATSURL: natsURL, Client: client, Collector: cfg, MetricsAddr: "127.0.0.1:0", Logger: logger, Registry: reg})
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for app.Ready() != nil || app.Buffered() > 0 || counterSum(reg, "schedlens_collector_published_total") < float64(n) {
		select {
		case err := <-done:
			return fmt.Errorf("collector stopped before it was ready: %v", err)
		case <-tick.C:
		}
	}
	gc := make(chan os.Signal, 1)
	signal.Notify(gc, syscall.SIGUSR1)
	defer signal.Stop(gc)
	fmt.Fprintf(stdout, "ready %d\n", int(counterSum(reg, "schedlens_collector_published_total")))
	for {
		select {
		case err := <-done:
			return err
		case <-gc:
			debug.FreeOSMemory() // a GC, then returns what is free to the OS
			if heapProfile != "" {
				if err := writeHeapProfile(heapProfile); err != nil {
					return err
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(stdout, "collected %d\n", ms.HeapAlloc)
		}
	}

}

// fakeCluster is a fake clientset holding n pods of memoryPods.
func fakeCluster(n int, seed string) (*fake.Clientset, error) {
	pods, err := memoryPods(n, seed)
	if err != nil {
		return nil, err
	}
	client := fake.NewSimpleClientset()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for i, p := range pods {
		if err := client.Tracker().Create(gvr, p, p.Namespace); err != nil {
			return nil, fmt.Errorf("add pod %s: %w", p.Name, err)
		}
		pods[i] = nil
	}
	return client, nil
}

func writeHeapProfile(path string) error {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}
