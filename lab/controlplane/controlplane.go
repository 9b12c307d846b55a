// Package controlplane runs a real Kubernetes control plane in this process: embedded etcd,
// kube-apiserver, kube-scheduler and, when Config.ControllerManager asks for it,
// kube-controller-manager (all from k8s.io/kubernetes v1.37.2), bound to 127.0.0.1 only. There
// is no kubelet: the lab's simulated kubelet (package kubelet) plays the nodes and posts their
// heartbeats.
//
// The cobra commands cannot be used twice in one process (each installs a signal handler or
// reconfigures the process-wide klog), so the lower-level pieces are called. The ServiceAccount
// and TaintNodesByCondition admission plugins are off (nothing creates service accounts; new
// nodes are registered Ready) while Priority stays on (preemption needs it); authentication is a
// static token in group system:masters (and ServiceAccount tokens from the TokenRequest API), and
// authorization is AlwaysAllow unless Config.RBAC asks for RBAC.
//
// The controller manager runs DefaultControllers: deployment, replicaset, statefulset,
// node-lifecycle, taint-eviction, disruption, garbage-collector, namespace and
// pod-garbage-collector. It is started from its pieces (CreateControllerContext,
// BuildControllers, RunControllers) under its own context, without leader election or a serving
// port, so it can be stopped and started again (StopControllerManager, StartControllerManager)
// and stops before the API server. Its node settings make a node failure quick to see:
//
//   - --node-monitor-period 1s and --node-monitor-grace-period 4s: a node whose Lease (renewed
//     every second by the simulated kubelet) has not changed for 4 s is marked Ready=Unknown and
//     tainted node.kubernetes.io/unreachable (NoSchedule and NoExecute), its pods Ready=False;
//     four heartbeat intervals keep a loaded 2-core machine from flapping;
//   - the API server's --default-not-ready-toleration-seconds and
//     --default-unreachable-toleration-seconds 2: the taint-eviction controller deletes a pod 2 s
//     after the NoExecute taint (condition DisruptionTarget, reason DeletionByTaintManager) unless
//     the pod tolerates it itself; a node failure thus ends in replacements about 6–8 s after the
//     last heartbeat;
//   - --node-eviction-rate 100 and --unhealthy-zone-threshold 1: several nodes of the lab's one
//     zone can fail together and all be evicted (the defaults, 0.1 node/s and 0.55, stop tainting
//     once more than two nodes and 55 % of a zone are down). If every node is down, the
//     controller still evicts nothing ("master disruption mode").
//
// Fixed upstream: deleting a namespace takes at least 5 s, and the pod garbage collector runs
// every 20 s.
package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/schedlens/schedlens/lab/background"
)

// Config says where the control plane keeps its state.
type Config struct {
	// Dir holds etcd's data, certificates, the token file, logs and the kubeconfig. It is
	// created if missing; the caller removes it.
	Dir string
	// EventTTL is how long the API server keeps events (its --event-ttl; 1h as in a cluster).
	EventTTL time.Duration
	// RBAC turns on RBAC authorization (--authorization-mode=RBAC), as in a real cluster: a
	// ServiceAccount can then do only what its Roles grant. The lab's own client and the
	// scheduler stay in system:masters. Off (AlwaysAllow), every authenticated request is allowed.
	RBAC bool
	// ControllerManager, when set, runs the kube-controller-manager beside the scheduler (and
	// sets the API server's default toleration seconds it asks for). Nil runs none: nothing
	// then marks a silent node NotReady or turns a Deployment into pods.
	ControllerManager *ControllerManagerConfig
}

// ControlPlane is a running etcd + kube-apiserver + kube-scheduler.
type ControlPlane struct {
	// Kubeconfig is the path of a kubeconfig for the API server (a system:masters token).
	Kubeconfig string
	// REST is the client configuration the kubeconfig describes.
	REST *rest.Config
	// Client is a clientset for the API server.
	Client kubernetes.Interface

	// ControllerManagerStartup is how long the controller manager took to start, its informers
	// synced (zero without one).
	ControllerManagerStartup time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	etcd   *embed.Etcd
	parts  background.Group // the API server and the scheduler
	logs   []io.Closer

	cmConfig *ControllerManagerConfig
	cmMu     sync.Mutex
	cm       *controllerManager // nil when not running
	cmErrs   []error            // what stopped controller managers stopped with
}

// the options and globals of kube-apiserver and kube-scheduler can be set up once per process.
var started sync.Once

// Start runs etcd, the API server and the scheduler, and returns once the API server is ready
// and the scheduler is running. Only one control plane can run per process.
func Start(ctx context.Context, cfg Config) (*ControlPlane, error) {
	first := false
	started.Do(func() { first = true })
	if !first {
		return nil, errors.New("a control plane already ran in this process (kube-apiserver keeps process-wide state)")
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = time.Hour
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("control plane dir: %w", err)
	}
	if cfg.ControllerManager != nil {
		c := cfg.ControllerManager.withDefaults()
		cfg.ControllerManager = &c
	}
	ctx, cancel := context.WithCancel(ctx)
	cp := &ControlPlane{ctx: ctx, cancel: cancel, cmConfig: cfg.ControllerManager}
	if err := cp.start(ctx, cfg); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context, cfg Config) error {
	// klog (API server, scheduler, client-go) goes to a file: shutdown noise would flood stderr.
	klogFile, err := os.Create(filepath.Join(cfg.Dir, "logs", "kube.log"))
	if err != nil {
		return err
	}
	cp.logs = append(cp.logs, klogFile)
	kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(kfs)
	for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
		if err := kfs.Set(name, value); err != nil {
			return fmt.Errorf("klog -%s: %w", name, err)
		}
	}
	klog.SetOutput(klogFile)

	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	if err := cp.startEtcd(cfg.Dir, etcdClient, etcdPeer); err != nil {
		return err
	}

	token, err := randomHex(16)
	if err != nil {
		return err
	}
	if err := writeFiles(cfg.Dir, token); err != nil {
		return err
	}
	host := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cp.REST = &rest.Config{Host: host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 200, Burst: 400}
	cp.Kubeconfig = filepath.Join(cfg.Dir, "kubeconfig")
	if err := writeKubeconfig(cp.Kubeconfig, host, token); err != nil {
		return err
	}
	if cp.Client, err = kubernetes.NewForConfig(cp.REST); err != nil {
		return err
	}

	if err := cp.startAPIServer(ctx, cfg, etcdClient, apiPort); err != nil {
		return err
	}
	if err := cp.waitReady(ctx, 60*time.Second); err != nil {
		return err
	}
	if err := cp.startScheduler(ctx); err != nil {
		return err
	}
	if cfg.ControllerManager == nil {
		return nil
	}
	t0 := time.Now()
	if err := cp.StartControllerManager(); err != nil {
		return err
	}
	cp.ControllerManagerStartup = time.Since(t0)
	return nil
}

// StartControllerManager starts the controller manager the Config asked for, if it is not
// running, and returns once its informers have synced. Starting it again after
// StopControllerManager is how a lab plays a controller-manager outage.
func (cp *ControlPlane) StartControllerManager() error {
	if cp.cmConfig == nil {
		return errors.New("the control plane was started without a controller manager")
	}
	cp.cmMu.Lock()
	defer cp.cmMu.Unlock()
	if cp.cm != nil {
		return nil
	}
	cm, err := startControllerManager(cp.ctx, cp.Kubeconfig, *cp.cmConfig)
	if err != nil {
		return err
	}
	cp.cm = cm
	return nil
}

// StopControllerManager stops the controller manager, if it runs, and waits for it.
func (cp *ControlPlane) StopControllerManager() {
	cp.cmMu.Lock()
	defer cp.cmMu.Unlock()
	if cp.cm == nil {
		return
	}
	cp.cm.stop()
	if err := cp.cm.parts.Err(); err != nil {
		cp.cmErrs = append(cp.cmErrs, err)
	}
	cp.cm = nil
}

func (cp *ControlPlane) startEtcd(dir string, clientPort, peerPort int) error {
	ec := embed.NewConfig()
	ec.Name = "lab"
	ec.Dir = filepath.Join(dir, "etcd")
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.Logger = "zap"
	ec.LogLevel = "warn"
	ec.LogOutputs = []string{filepath.Join(dir, "logs", "etcd.log")}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return fmt.Errorf("start etcd: %w", err)
	}
	cp.etcd = e
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("etcd not ready after 30s")
	}
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, cfg Config, etcdPort, port int) error {
	s := apiserveroptions.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	sa := filepath.Join(cfg.Dir, "sa.key")
	authz := "AlwaysAllow"
	if cfg.RBAC {
		authz = "RBAC"
	}
	args := []string{
		"--etcd-servers=" + fmt.Sprintf("http://127.0.0.1:%d", etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(cfg.Dir, "certs"),
		"--token-auth-file=" + filepath.Join(cfg.Dir, "tokens.csv"),
		"--authorization-mode=" + authz,
		"--service-account-key-file=" + sa,
		"--service-account-signing-key-file=" + sa,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--event-ttl=" + cfg.EventTTL.String(),
	}
	if cfg.ControllerManager != nil {
		args = append(args, cfg.ControllerManager.apiServerArgs()...)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-apiserver feature gates: %w", err)
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return fmt.Errorf("kube-apiserver options: %w", errors.Join(errs...))
	}
	cp.parts.Go("kube-apiserver", func() error { return apiserverapp.Run(ctx, completed) })
	return nil
}

func (cp *ControlPlane) startScheduler(ctx context.Context) error {
	o := scheduleroptions.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range o.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--kubeconfig=" + cp.Kubeconfig, "--leader-elect=false", "--secure-port=0"}); err != nil {
		return fmt.Errorf("kube-scheduler flags: %w", err)
	}
	if err := o.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-scheduler feature gates: %w", err)
	}
	cc, sched, err := schedulerapp.Setup(ctx, o)
	if err != nil {
		return fmt.Errorf("kube-scheduler setup: %w", err)
	}
	cp.parts.Go("kube-scheduler", func() error { return schedulerapp.Run(ctx, cc, sched) })
	return nil
}

// waitReady polls the API server's /readyz.
func (cp *ControlPlane) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if err := cp.Err(); err != nil {
			return err
		}
		body, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("kube-apiserver not ready after %s: %v", timeout, last)
}

// Err returns what made a component stop early, if anything did.
func (cp *ControlPlane) Err() error {
	cp.cmMu.Lock()
	defer cp.cmMu.Unlock()
	errs := append([]error{cp.parts.Err()}, cp.cmErrs...)
	if cp.cm != nil {
		errs = append(errs, cp.cm.parts.Err())
	}
	return errors.Join(errs...)
}

// Stop stops the controller manager first (cancelled together with the API server, its
// controllers would log connection errors for up to 30 s), then the scheduler and the API
// server, then etcd, and waits for them.
func (cp *ControlPlane) Stop() {
	cp.StopControllerManager()
	cp.cancel()
	done := make(chan struct{})
	go func() { cp.parts.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
	}
	if cp.etcd != nil {
		cp.etcd.Close()
	}
	klog.Flush()
	for _, c := range cp.logs {
		c.Close()
	}
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeFiles writes the static token file and a fresh service-account signing key.
func writeFiles(dir, token string) error {
	tokens := fmt.Sprintf("%s,lab-admin,lab-admin,\"system:masters\"\n", token)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// writeKubeconfig writes a kubeconfig for the lab. The API server's certificate is self-signed
// on 127.0.0.1, so TLS verification is skipped: the lab never leaves loopback.
func writeKubeconfig(path, host, token string) error {
	c := clientcmdapi.NewConfig()
	c.Clusters["lab"] = &clientcmdapi.Cluster{Server: host, InsecureSkipTLSVerify: true}
	c.AuthInfos["lab-admin"] = &clientcmdapi.AuthInfo{Token: token}
	c.Contexts["lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "lab-admin"}
	c.CurrentContext = "lab"
	return clientcmd.WriteToFile(*c, path)
}
