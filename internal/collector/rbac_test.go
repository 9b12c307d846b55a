package collector_test

import (
	"bytes"
	"os"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

// checkRBAC fails unless deploy/rbac.yaml allows every request the collector made (actions,
// recorded by the fake clientset before the test made changes of its own) and grants nothing
// beyond read access.
func checkRBAC(t *testing.T, actions []k8stesting.Action) {
	t.Helper()
	b, err := os.ReadFile("../../deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var r rbacv1.ClusterRole
		if err := yaml.Unmarshal(doc, &r); err != nil {
			t.Fatalf("deploy/rbac.yaml: %v", err)
		}
		if r.Kind == "ClusterRole" {
			role = &r
		}
	}
	if role == nil {
		t.Fatal("deploy/rbac.yaml has no ClusterRole")
	}
	for _, rule := range role.Rules {
		for _, v := range rule.Verbs {
			if !slices.Contains([]string{"get", "list", "watch"}, v) {
				t.Errorf("deploy/rbac.yaml grants %q on %v: the collector only reads", v, rule.Resources)
			}
		}
	}
	allowed := func(verb, group, resource string) bool {
		for _, rule := range role.Rules {
			if slices.Contains(rule.Verbs, verb) && slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) {
				return true
			}
		}
		return false
	}
	if len(actions) == 0 {
		t.Fatal("no requests recorded")
	}
	for _, a := range actions {
		gvr := a.GetResource()
		if !allowed(a.GetVerb(), gvr.Group, gvr.Resource) {
			t.Errorf("the collector %s %s.%s, which deploy/rbac.yaml does not allow", a.GetVerb(), gvr.Resource, gvr.Group)
		}
	}
}
