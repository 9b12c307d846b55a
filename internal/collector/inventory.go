package collector

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/kube"
)

// scopeWatch is what one namespace (or all of them) contributes.
type scopeWatch struct {
	scope      events.Scope
	pods       cache.SharedIndexInformer
	events     cache.SharedIndexInformer
	configMaps cache.SharedIndexInformer
	registries cache.SharedIndexInformer   // label registry ConfigMaps
	workloads  []cache.SharedIndexInformer // Deployments, ReplicaSets, StatefulSets
	due        atomic.Bool                 // an inventory was asked for (a pod vanished in a relist)

	// live is the watch session heartbeats speak for: since is the list time of the inventory
	// it began with (zero while no session is live); after a watch error, brokenRV is the
	// resource version the informer had, and a new session starts once it moves on.
	liveMu   sync.Mutex
	since    time.Time
	broken   bool
	brokenRV string
}

// watchFailed ends the scope's live session: until the informer has listed or watched again,
// no heartbeat speaks for it.
func (sw *scopeWatch) watchFailed() {
	sw.liveMu.Lock()
	defer sw.liveMu.Unlock()
	sw.since, sw.broken, sw.brokenRV = time.Time{}, true, sw.pods.LastSyncResourceVersion()
}

// loop publishes inventories when asked and periodically, and expires waiting events.
func (c *Collector) loop(ctx context.Context) error {
	var periodic <-chan time.Time
	if c.cfg.InventoryEvery > 0 {
		t := time.NewTicker(c.cfg.InventoryEvery)
		defer t.Stop()
		periodic = t.C
	}
	var heartbeat <-chan time.Time
	if c.cfg.HeartbeatEvery > 0 {
		t := time.NewTicker(c.cfg.HeartbeatEvery)
		defer t.Stop()
		heartbeat = t.C
	}
	janitor := time.NewTicker(max(c.cfg.PendingTTL/4, 100*time.Millisecond))
	defer janitor.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-heartbeat:
			for _, sw := range c.scopes {
				if err := c.heartbeat(ctx, sw); err != nil {
					return nil
				}
			}
		case <-c.inventoryDue:
			for _, sw := range c.scopes {
				if sw.due.Swap(false) {
					if err := c.inventory(ctx, sw); err != nil {
						return nil
					}
				}
			}
		case <-periodic:
			for _, sw := range c.scopes {
				if sw.watchBroken() {
					continue // its cache may be stale: the recovery starts a new session
				}
				if err := c.inventory(ctx, sw); err != nil {
					return nil
				}
			}
		case <-janitor.C:
			c.expire()
		}
	}
}

func (c *Collector) askInventory(sw *scopeWatch) {
	sw.due.Store(true)
	select {
	case c.inventoryDue <- struct{}{}:
	default:
	}
}

func (sw *scopeWatch) watchBroken() bool {
	sw.liveMu.Lock()
	defer sw.liveMu.Unlock()
	return sw.broken
}

// heartbeat says sw's watch is still live, or, when a watch error ended its session and the
// informer has since listed or watched again, starts a new session with an inventory.
func (c *Collector) heartbeat(ctx context.Context, sw *scopeWatch) error {
	sw.liveMu.Lock()
	since, recovered := sw.since, sw.broken && sw.pods.LastSyncResourceVersion() != sw.brokenRV
	sw.liveMu.Unlock()
	if since.IsZero() {
		if recovered {
			return c.inventory(ctx, sw)
		}
		return nil
	}
	env, err := kube.HeartbeatEnvelope(since, c.meta(sw))
	if err != nil {
		c.convertError("heartbeat", sw.scope.Key(), err)
		return nil
	}
	if err := c.pub.Put(ctx, env); err != nil {
		return err
	}
	c.m.heartbeats.Inc()
	return nil
}

// inventory publishes the UIDs of every pod in sw's informer cache. The time is taken before
// the cache is read: a pod whose snapshot was published earlier is in the cache (the cache is
// updated before handlers run) unless its deletion was published too. The first inventory of a
// watch session starts what its heartbeats speak for.
func (c *Collector) inventory(ctx context.Context, sw *scopeWatch) error {
	m := c.meta(sw)
	sw.liveMu.Lock()
	if sw.since.IsZero() {
		sw.since, sw.broken = m.Observed, false
	}
	sw.liveMu.Unlock()
	var uids []string
	for _, obj := range sw.pods.GetStore().List() {
		if uid, ok := kube.PodUID(obj); ok {
			uids = append(uids, string(uid))
		}
	}
	// A scope too large for one message is published in parts (kube.InventoryEnvelopes); the
	// correlator applies them together once all are stored.
	envs, err := kube.InventoryEnvelopes(uids, m.Observed, m, c.cfg.InventoryChunk)
	if err != nil {
		c.convertError("inventory", sw.scope.Key(), err)
		return nil
	}
	for _, env := range envs {
		if err := c.pub.Put(ctx, env); err != nil {
			return err
		}
	}
	c.m.inventories.Inc()
	return nil
}

// expire drops events that waited too long for their pod (pods outside the scope) and forgets
// pods deleted long ago.
func (c *Collector) expire() {
	now := c.cfg.Clock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, list := range c.pending {
		kept := list[:0]
		for _, pe := range list {
			if now.Sub(pe.since) < c.cfg.PendingTTL {
				kept = append(kept, pe)
			} else {
				c.m.unattributed.Inc()
			}
		}
		if len(kept) == 0 {
			delete(c.pending, uid)
		} else {
			c.pending[uid] = kept
		}
	}
	for uid, gone := range c.known {
		if !gone.IsZero() && now.Sub(gone) > c.cfg.ForgetAfter {
			delete(c.known, uid)
		}
	}
}
