package config

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeConfig loads the kubeconfig named, else the in-cluster config, else the default loading
// rules (KUBECONFIG, ~/.kube/config): how the collector finds the cluster it watches and the api
// the API server it asks with -auth kubernetes.
func KubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		if c, err := rest.InClusterConfig(); err == nil {
			return c, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes config: %w", err)
	}
	return c, nil
}
