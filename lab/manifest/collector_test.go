package manifest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/schedlens/schedlens/internal/natstest"
	"github.com/schedlens/schedlens/internal/testenv"
)

// serviceAccountClient returns a kubeconfig file and a clientset that authenticate as the
// ServiceAccount ns/name with a token from the TokenRequest API (as the kubelet mounts one).
func serviceAccountClient(t *testing.T, ns, name string) (string, kubernetes.Interface) {
	t.Helper()
	tr, err := cp.Client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, name, err)
	}
	c := clientcmdapi.NewConfig()
	c.Clusters["lab"] = &clientcmdapi.Cluster{Server: cp.REST.Host, InsecureSkipTLSVerify: true}
	c.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	c.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "sa", Namespace: ns}
	c.CurrentContext = "lab"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: cp.REST.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return path, client
}

func ptr[T any](v T) *T { return &v }

// process is a started binary whose output the test keeps.
type process struct {
	cmd *exec.Cmd
	testenv.LogBuffer
}

// start runs a binary with exactly env (plus PATH and HOME) until the test ends, then stops it
// with SIGINT and fails the test if it does not exit cleanly.
func start(t *testing.T, bin string, env map[string]string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...)}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s exited with %v:\n%s", filepath.Base(bin), err, p.String())
			}
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGINT:\n%s", filepath.Base(bin), p.String())
		}
	})
	return p
}

func httpGet(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func waitReady(t *testing.T, what, url string, p *process) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, body := httpGet(url)
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 90s (%d %s); its log:\n%s", what, code, body, p.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// postIngest posts one external result to the collector's ingest listener and wants it taken.
func postIngest(t *testing.T, addr string) {
	t.Helper()
	row := `{"pod_uid":"0f0e0d0c-0000-4000-8000-000000000001","pod_namespace":"ns","pod_name":"p","sent_at":"2026-12-01T00:00:00Z","latency_ms":5,"status":200,"ok":true}`
	resp, err := http.Post("http://"+addr+"/v1/ingest/requests", "application/x-ndjson", strings.NewReader(row+"\n"))
	if err != nil {
		t.Fatalf("POST /v1/ingest/requests: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"accepted":1`) {
		t.Errorf("POST /v1/ingest/requests on the ingest listener: %d %s, want 200 with one accepted", resp.StatusCode, body)
	}
}

// `collector run` with the chart's ServiceAccount token and the chart's settings, on the lab's
// API server with RBAC authorization on: it lists and watches everything it needs (its /readyz
// says so, and nothing was forbidden), while writes and Secrets are forbidden to that token.
func TestCollectorRunsWithTheChartsServiceAccount(t *testing.T) {
	bin := binaries(t)
	nats := natstest.Start(t).URL()
	for _, s := range scenarios(t) {
		if s.name != "01-default" && s.name != "03-namespaced" {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			ns := "rbac-" + s.name[:2]
			objs := installScenario(t, s, ns)
			env := deploymentEnv(t, objs, "-collector")
			kubeconfig, sa := serviceAccountClient(t, ns, ns+"-schedlens")
			if got := env["SCHEDLENS_INGEST_ADDR"]; got != ":9102" {
				t.Errorf("the chart gives the collector SCHEDLENS_INGEST_ADDR %q, want \":9102\" (collector.ingestPort)", got)
			}
			metrics, ingest := testenv.FreeAddr(t), testenv.FreeAddr(t)
			env["SCHEDLENS_NATS_URL"] = nats
			env["SCHEDLENS_METRICS_ADDR"] = metrics
			env["SCHEDLENS_INGEST_ADDR"] = ingest
			env["SCHEDLENS_SOURCE"] = "collector/" + ns
			p := start(t, bin+"/collector", env, "run", "-kubeconfig", kubeconfig)
			waitReady(t, "collector", "http://"+metrics+"/readyz", p)
			postIngest(t, ingest)
			// One more inventory cycle's worth of time for a late denial to show in the log.
			time.Sleep(time.Second)
			if log := strings.ToLower(p.String()); strings.Contains(log, "forbidden") {
				t.Errorf("the collector was refused something:\n%s", p.String())
			}

			ctx := context.Background()
			watched := ns
			if list := env["SCHEDLENS_NAMESPACES"]; list != "" {
				watched = strings.Split(list, ",")[0]
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
			for _, c := range []struct {
				what string
				do   func() error
			}{
				{"create a pod", func() error {
					_, err := sa.CoreV1().Pods(watched).Create(ctx, pod, metav1.CreateOptions{})
					return err
				}},
				{"read a Secret", func() error {
					_, err := sa.CoreV1().Secrets(ns).Get(ctx, "anything", metav1.GetOptions{})
					return err
				}},
				{"list Secrets", func() error {
					_, err := sa.CoreV1().Secrets(watched).List(ctx, metav1.ListOptions{})
					return err
				}},
				{"get a pod (only list and watch are granted)", func() error {
					_, err := sa.CoreV1().Pods(watched).Get(ctx, "anything", metav1.GetOptions{})
					return err
				}},
				{"delete a ConfigMap", func() error {
					return sa.CoreV1().ConfigMaps(watched).Delete(ctx, "anything", metav1.DeleteOptions{})
				}},
			} {
				if err := c.do(); !apierrors.IsForbidden(err) {
					t.Errorf("%s with the collector's token: %v, want forbidden", c.what, err)
				}
			}
			if _, err := sa.CoreV1().Pods(watched).List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("list pods in %s: %v", watched, err)
			}
			if env["SCHEDLENS_NAMESPACES"] != "" {
				if _, err := sa.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
					t.Errorf("list pods outside the watched namespaces: %v, want forbidden", err)
				}
			}
			if t.Failed() {
				t.Logf("collector log:\n%s", p.String())
			}
		})
	}
}
