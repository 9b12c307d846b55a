package endpoints_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/testenv"
	"github.com/schedlens/schedlens/lab/endpoints"
	"github.com/schedlens/schedlens/lab/sim"
)

// fakeSource stands in for the simulated kubelet: the Source interface is the boundary.
type fakeSource struct {
	mu    sync.Mutex
	pods  []sim.Pod
	nodes []sim.Node
}

func (f *fakeSource) Pods() []sim.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pods)
}

func (f *fakeSource) Nodes() []sim.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.nodes)
}

// setPod adds p, or replaces the pod with its UID.
func (f *fakeSource) setPod(p sim.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = upsert(f.pods, p, func(q sim.Pod) bool { return q.UID == p.UID })
}

func (f *fakeSource) removePod(uid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = slices.DeleteFunc(f.pods, func(p sim.Pod) bool { return p.UID == uid })
}

// setNode adds n, or replaces the node with its name.
func (f *fakeSource) setNode(n sim.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = upsert(f.nodes, n, func(m sim.Node) bool { return m.Name == n.Name })
}

// upsert replaces the first element of xs that same picks with x, or appends x.
func upsert[T any](xs []T, x T, same func(T) bool) []T {
	if i := slices.IndexFunc(xs, same); i >= 0 {
		xs[i] = x
		return xs
	}
	return append(xs, x)
}

var ipSeq atomic.Uint32

// loopbackIP returns a 127.x.y.z address no other test in this process uses; the second octet
// is random so that concurrent test processes are unlikely to meet.
var ipBase = 100 + rand.IntN(100)

func loopbackIP() string {
	n := ipSeq.Add(1)
	return fmt.Sprintf("127.%d.%d.%d", ipBase, n/250, 1+n%250)
}

// testConfig is a Config on free ports with a fast reconcile.
func testConfig(t *testing.T) endpoints.Config {
	return endpoints.Config{
		Port:      testenv.FreePort(t),
		DCGMPort:  testenv.FreePort(t),
		Seed:      42,
		Reconcile: 10 * time.Millisecond,
	}
}

// start runs a Server until the test ends; stop cancels it and returns Run's error.
func start(t *testing.T, src sim.Source, cfg endpoints.Config) (stop func() error) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := endpoints.New(src, cfg, logger)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("Run did not return within 10s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return stop
}

func addr(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

// refused reports whether a connection to addr is refused.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// eventually polls cond until it holds or 5s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testenv.Until(5*time.Second, 5*time.Millisecond, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
