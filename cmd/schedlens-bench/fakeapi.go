package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeRV is the resourceVersion of every list the fake API serves: nothing changes after the
// pods are added.
const fakeRV = "1000000"

// initialEventsEnd is the annotation of the bookmark that ends a watch-list's initial events.
const initialEventsEnd = "k8s.io/initial-events-end"

// fakeAPI serves a fake clientset's pods over HTTP as a kube-apiserver serves them to client-go
// (lists with limit/continue pages, watches, watch-lists with their initial events and the
// closing bookmark), so the collector under measurement runs in a process of its own, decoding
// JSON from a socket as it does against a real cluster, while the pods live in the bench. Only
// what the collector's informers ask for is served: pods, and empty lists of events.k8s.io/v1
// events, ConfigMaps and nodes.
type fakeAPI struct {
	pods   [][]byte // each pod as JSON, with its kind and apiVersion
	logger *slog.Logger
	// podLists and podWatchLists count how the pods were asked for: pages of a list, or
	// watch-lists (client-go's WatchListClient, on by default since 1.35).
	podLists, podWatchLists atomic.Int64
}

// newFakeAPI encodes the pods of client's namespace ns once.
func newFakeAPI(ctx context.Context, client *fake.Clientset, ns string, logger *slog.Logger) (*fakeAPI, error) {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the fake clientset's pods: %w", err)
	}
	a := &fakeAPI{pods: make([][]byte, len(list.Items)), logger: logger}
	for i := range list.Items {
		p := &list.Items[i]
		p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		if a.pods[i], err = json.Marshal(p); err != nil {
			return nil, fmt.Errorf("encode pod %s: %w", p.Name, err)
		}
	}
	return a, nil
}

// serve listens on a loopback port until ctx ends and returns the base URL.
func (a *fakeAPI) serve(ctx context.Context) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("fake api listen: %w", err)
	}
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = srv.Serve(l) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	return "http://" + l.Addr().String(), nil
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "the bench's fake api only lists and watches", http.StatusMethodNotAllowed)
		return
	}
	var kind string
	var items [][]byte
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/api/v1/namespaces/"+memoryNamespace+"/pods"), p == "/api/v1/pods":
		kind, items = "Pod", a.pods
	case strings.HasSuffix(p, "/configmaps"):
		kind = "ConfigMap"
	case strings.HasSuffix(p, "/nodes"):
		kind = "Node"
	case strings.HasPrefix(p, "/apis/events.k8s.io/v1/") && strings.HasSuffix(p, "/events"):
		kind = "Event"
	default:
		a.logger.Debug("fake api: not served", "path", p)
		http.NotFound(w, r)
		return
	}
	apiVersion := "v1"
	if kind == "Event" {
		apiVersion = "events.k8s.io/v1"
	}
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	if q.Get("watch") == "true" || q.Get("watch") == "1" {
		initial := q.Get("sendInitialEvents") == "true"
		if initial && kind == "Pod" {
			a.podWatchLists.Add(1)
		}
		a.watch(w, r, kind, apiVersion, items, initial)
		return
	}
	if kind == "Pod" {
		a.podLists.Add(1)
	}
	a.list(w, q, kind, apiVersion, items)
}

// list writes one page of items: from the offset in continue, at most limit of them.
func (a *fakeAPI) list(w http.ResponseWriter, q map[string][]string, kind, apiVersion string, items [][]byte) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	off, _ := strconv.Atoi(get("continue"))
	off = min(max(off, 0), len(items))
	end := len(items)
	if limit, _ := strconv.Atoi(get("limit")); limit > 0 {
		end = min(end, off+limit)
	}
	meta := map[string]any{"resourceVersion": fakeRV}
	if end < len(items) {
		meta["continue"] = strconv.Itoa(end)
		meta["remainingItemCount"] = len(items) - end
	}
	head, _ := json.Marshal(map[string]any{"kind": kind + "List", "apiVersion": apiVersion, "metadata": meta})
	// {"kind":…,"metadata":{…},"items":[…]}
	_, _ = w.Write(head[:len(head)-1])
	_, _ = w.Write([]byte(`,"items":[`))
	for i, it := range items[off:end] {
		if i > 0 {
			_, _ = w.Write([]byte(","))
		}
		_, _ = w.Write(it)
	}
	_, _ = w.Write([]byte("]}"))
}

// watch streams the initial events when asked (a watch-list), then its closing bookmark, then
// nothing until the client leaves or timeoutSeconds pass.
func (a *fakeAPI) watch(w http.ResponseWriter, r *http.Request, kind, apiVersion string, items [][]byte, initial bool) {
	flusher, _ := w.(http.Flusher)
	w.WriteHeader(http.StatusOK)
	if initial {
		for _, it := range items {
			_, _ = fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", it)
		}
		bookmark, _ := json.Marshal(map[string]any{"type": "BOOKMARK", "object": map[string]any{
			"kind": kind, "apiVersion": apiVersion,
			"metadata": map[string]any{"resourceVersion": fakeRV, "annotations": map[string]string{initialEventsEnd: "true"}},
		}})
		_, _ = w.Write(append(bookmark, '\n'))
	}
	if flusher != nil {
		flusher.Flush()
	}
	timeout := 10 * time.Minute
	if s, err := strconv.Atoi(r.URL.Query().Get("timeoutSeconds")); err == nil && s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	select {
	case <-r.Context().Done():
	case <-time.After(timeout):
	}
}
