package kube

import corev1 "k8s.io/api/core/v1"

// SpecOf is the spec a cached pod holds (shared with the pods whose spec is equal).
func SpecOf(p *CachedPod) *corev1.PodSpec { return p.spec }
