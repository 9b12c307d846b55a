package collector_test

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/prober"
)

// Two namespaces define an experiment of the same name with different fixed requests: each pod
// is probed with the request of its own namespace, never with the other's (a ConfigMap in one
// namespace cannot choose what reaches the pods of another).
func TestProbeRequestComesFromThePodsNamespace(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	paths := map[string]bool{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.URL.Path] = true
		mu.Unlock()
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)

	var objs []runtime.Object
	for i, ns := range []string{"team-a", "team-b"} {
		objs = append(objs,
			&corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "day20", ResourceVersion: "1", Labels: map[string]string{events.LabelExperiment: "day20"}},
				Data:       map[string]string{"fixed": `{"request":{"method":"GET","port":` + port + `,"path":"/` + ns + `"}}`},
			},
			&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "model-0", ResourceVersion: "1",
					UID: types.UID("0f0e0d0c-0000-4000-8000-00000000000" + strconv.Itoa(i+1)), Labels: map[string]string{events.LabelExperiment: "day20"}},
				Spec:   corev1.PodSpec{NodeName: "gpu-node-1"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1"},
			})
	}
	nsrv := natstest.Start(t)
	k := newCluster(t, objs...)
	pc := prober.DefaultConfig()
	pc.Interval = 50 * time.Millisecond
	startCollector(t, k, nsrv.URL(), testOpts{namespaces: []string{"team-a", "team-b"}, probe: &pc})

	byNS := map[string]map[string]bool{}
	waitFor(t, 10*time.Second, "probe results from both namespaces", func() bool {
		byNS = map[string]map[string]bool{}
		for _, e := range streamEnvelopes(t, nsrv.URL()) {
			if e.Kind != events.KindRequest {
				continue
			}
			u, err := url.Parse(e.Payload.(*events.Request).Target)
			if err != nil {
				t.Fatal(err)
			}
			if byNS[e.Pod.Namespace] == nil {
				byNS[e.Pod.Namespace] = map[string]bool{}
			}
			byNS[e.Pod.Namespace][u.Path] = true
		}
		return len(byNS) == 2
	})
	for _, ns := range []string{"team-a", "team-b"} {
		if len(byNS[ns]) != 1 || !byNS[ns]["/"+ns] {
			t.Errorf("pods of %s probed at %v, want only /%s", ns, byNS[ns], ns)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 2 || !paths["/team-a"] || !paths["/team-b"] {
		t.Errorf("the server received %v, want /team-a and /team-b", paths)
	}
}
