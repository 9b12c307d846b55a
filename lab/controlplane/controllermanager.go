package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/controller-manager/pkg/clientbuilder"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"

	"github.com/schedlens/schedlens/lab/background"
)

// ControllerManagerConfig turns on the in-process kube-controller-manager and tunes how fast it
// notices a node that stopped its heartbeats. Zero fields take the lab's defaults (see the
// package doc).
type ControllerManagerConfig struct {
	// Controllers are the controllers to run, by their canonical names (default:
	// DefaultControllers).
	Controllers []string
	// NodeMonitorPeriod is how often the node lifecycle controller checks the nodes
	// (--node-monitor-period; default 1s).
	NodeMonitorPeriod time.Duration
	// NodeMonitorGracePeriod is how long a node may post no heartbeat before it is marked
	// Unknown, i.e. NotReady (--node-monitor-grace-period; default 4s, four heartbeat intervals).
	NodeMonitorGracePeriod time.Duration
	// NodeEvictionRate is how many nodes per second may be tainted for eviction in a healthy
	// zone (--node-eviction-rate; default 100, so that several nodes can fail at once).
	NodeEvictionRate float64
	// UnhealthyZoneThreshold is the share of NotReady nodes above which a zone counts as
	// partially disrupted and stops evicting (--unhealthy-zone-threshold; default 1: never
	// before every node is down).
	UnhealthyZoneThreshold float64
	// TolerationSeconds is the API server's --default-not-ready-toleration-seconds and
	// --default-unreachable-toleration-seconds: how long a pod without its own toleration
	// stays on a tainted node before the taint-eviction controller deletes it (default 2).
	TolerationSeconds int
}

// DefaultControllers are the controllers the lab runs: workloads (Deployment, ReplicaSet,
// StatefulSet), node failures (node lifecycle, taint-based eviction), the Eviction API's
// PodDisruptionBudgets (disruption), DRA's ResourceClaims made from pods' templates
// (resourceclaim), and the clean-up ones (garbage collector, namespace, pod GC).
func DefaultControllers() []string {
	return []string{
		names.DeploymentController,
		names.ReplicaSetController,
		names.StatefulSetController,
		names.NodeLifecycleController,
		names.TaintEvictionController,
		names.DisruptionController,
		names.ResourceClaimController,
		names.GarbageCollectorController,
		names.NamespaceController,
		names.PodGarbageCollectorController,
	}
}

func (c ControllerManagerConfig) withDefaults() ControllerManagerConfig {
	if len(c.Controllers) == 0 {
		c.Controllers = DefaultControllers()
	}
	if c.NodeMonitorPeriod <= 0 {
		c.NodeMonitorPeriod = time.Second
	}
	if c.NodeMonitorGracePeriod <= 0 {
		c.NodeMonitorGracePeriod = 4 * time.Second
	}
	if c.NodeEvictionRate <= 0 {
		c.NodeEvictionRate = 100
	}
	if c.UnhealthyZoneThreshold <= 0 {
		c.UnhealthyZoneThreshold = 1
	}
	if c.TolerationSeconds <= 0 {
		c.TolerationSeconds = 2
	}
	return c
}

// apiServerArgs are the API server flags the configuration needs.
func (c ControllerManagerConfig) apiServerArgs() []string {
	s := strconv.Itoa(c.TolerationSeconds)
	return []string{"--default-not-ready-toleration-seconds=" + s, "--default-unreachable-toleration-seconds=" + s}
}

// args are the kube-controller-manager flags of the configuration.
func (c ControllerManagerConfig) args(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		// One manager: leader election would need a Lease and, when lost, exits the process.
		"--leader-elect=false",
		// No serving: no self-signed certificate, no delegated authn/authz lookups, no listener.
		"--secure-port=0",
		"--controllers=" + strings.Join(c.Controllers, ","),
		"--node-monitor-period=" + c.NodeMonitorPeriod.String(),
		"--node-monitor-grace-period=" + c.NodeMonitorGracePeriod.String(),
		// Only for nodes that never posted Ready; the lab's post Ready at registration.
		"--node-startup-grace-period=" + (2 * c.NodeMonitorGracePeriod).String(),
		"--node-eviction-rate=" + strconv.FormatFloat(c.NodeEvictionRate, 'f', -1, 64),
		"--unhealthy-zone-threshold=" + strconv.FormatFloat(c.UnhealthyZoneThreshold, 'f', -1, 64),
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	}
}

// controllerManager is a running kube-controller-manager with its own context, so that it stops
// before the API server it talks to.
type controllerManager struct {
	cancel context.CancelFunc
	parts  background.Group
}

// startControllerManager starts the controllers under a child of ctx and returns once their
// shared informers have synced. It calls the pieces app.Run calls once leader election is off
// (CreateControllerContext, BuildControllers, RunControllers), not app.Run itself: Run registers
// configz, which works once per process, and serves nothing the lab needs. The cobra command is
// not used either: it applies logging flags to the process-wide klog and may install a signal
// handler.
func startControllerManager(ctx context.Context, kubeconfig string, cfg ControllerManagerConfig) (*controllerManager, error) {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager options: %w", err)
	}
	all, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range s.Flags(all, disabled, aliases).FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(cfg.args(kubeconfig)); err != nil {
		return nil, fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	// The registry is process-wide, shared with the API server and the scheduler; no
	// --feature-gates are given, so this changes nothing they set.
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, fmt.Errorf("kube-controller-manager feature gates: %w", err)
	}
	c, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager config: %w", err)
	}
	cc := c.Complete()

	ctx, cancel := context.WithCancel(ctx)
	cm := &controllerManager{cancel: cancel}
	// Without --use-service-account-credentials every controller uses the kubeconfig's
	// credentials (system:masters), as app.Run would.
	root := clientbuilder.SimpleControllerClientBuilder{ClientConfig: cc.Kubeconfig}
	cctx, err := kcmapp.CreateControllerContext(ctx, cc, root, root)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kube-controller-manager context: %w", err)
	}
	descriptors := kcmapp.NewControllerDescriptors()
	// BuildControllers builds the service-account token controller whenever it is in the map,
	// whatever --controllers says; it only mints legacy token Secrets and needs a private key.
	delete(descriptors, names.ServiceAccountTokenController)
	controllers, err := kcmapp.BuildControllers(ctx, cctx, descriptors, nil, noHealthChecks{})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kube-controller-manager controllers: %w", err)
	}
	// Informers start only once every controller has registered the ones it needs; closing
	// InformersStarted then lets the garbage collector start the monitors it adds later.
	cctx.InformerFactory.Start(ctx.Done())
	cctx.ObjectOrMetadataInformerFactory.Start(ctx.Done())
	close(cctx.InformersStarted)
	cm.parts.Go("kube-controller-manager", func() error {
		defer cctx.InformerFactory.Shutdown()
		defer cc.EventBroadcaster.Shutdown()
		if !kcmapp.RunControllers(ctx, cctx, controllers, kcmapp.ControllerStartJitter, cc.ControllerShutdownTimeout) {
			return errors.New("controllers did not stop within the shutdown timeout")
		}
		return nil
	})
	for typ, ok := range cctx.InformerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cm.stop()
			return nil, fmt.Errorf("kube-controller-manager: informer of %v did not sync", typ)
		}
	}
	return cm, nil
}

// stop cancels the controllers and waits for them (RunControllers itself gives up after the
// shutdown timeout, 10 s by default).
func (cm *controllerManager) stop() {
	cm.cancel()
	cm.parts.Wait()
}

// noHealthChecks drops the health checks BuildControllers registers: with no secure port there
// is no /healthz to serve them.
type noHealthChecks struct{}

func (noHealthChecks) AddHealthChecker(...healthz.HealthChecker) {}
