#!/bin/sh
# derive.sh rebuilds testdata/derived/ from the recorded dcgm-exporter output in testdata/recorded/.
# Run it from testdata/: `sh derive.sh`. It only adds or renames labels, drops whole metric
# families, or (in two places, listed in README.md) changes a value; HELP/TYPE lines, label
# order and value formatting stay as dcgm-exporter wrote them. Needs sed and awk (POSIX).
set -eu
export LC_ALL=C

rec=recorded
out=derived
mkdir -p "$out"

# Time-slicing: dcgm-exporter writes one series per pod sharing the GPU, every one with the
# device's values and the pod's labels appended after DCGM_FI_DRIVER_VERSION (sorted by name).
awk '
/^#/ { print; next }
{
	line1 = $0; sub(/"} /, "\",container=\"server\",namespace=\"day20\",pod=\"chat-7d9f8b6c5-4xkqp\"} ", line1)
	line2 = $0; sub(/"} /, "\",container=\"server\",namespace=\"day20\",pod=\"chat-7d9f8b6c5-9vbn2\"} ", line2)
	line3 = $0; sub(/"} /, "\",container=\"embedder\",namespace=\"day20\",pod=\"embed-5c6d7f8b9-tq2lm\"} ", line3)
	print line1; print line2; print line3
}' "$rec/l40s-idle-node.prom" >"$out/l40s-time-sliced.prom"

# dcgm-exporter since NVIDIA/dcgm-exporter#655 spells the host label `hostname`.
sed 's/,Hostname="/,hostname="/' "$rec/l40s-idle-node.prom" >"$out/l40s-hostname-lowercase.prom"

# MIG: an A100 split into two GPU instances. dcgm-exporter inserts GPU_I_PROFILE and GPU_I_ID
# after modelName and does not report the DCGM_FI_DEV_*_UTIL fields for MIG instances
# (NVIDIA/dcgm-exporter#50, #105, #430). Instance 1 holds a pod, instance 2 none (no pod labels).
awk '
/DCGM_FI_DEV_(GPU|MEM_COPY|ENC|DEC)_UTIL/ { next }
/^#/ { print; next }
{
	base = $0
	sub(/modelName="NVIDIA L40S"/, "modelName=\"NVIDIA A100-SXM4-40GB\"", base)
	i1 = base; sub(/,Hostname="/, ",GPU_I_PROFILE=\"4g.20gb\",GPU_I_ID=\"1\",Hostname=\"", i1)
	sub(/"} /, "\",container=\"server\",namespace=\"day20\",pod=\"chat-mig-6b7c8d9f4-k8s7d\"} ", i1)
	if (i1 ~ /^DCGM_FI_PROF_GR_ENGINE_ACTIVE\{/) sub(/} .*$/, "} 0.731250", i1)
	i2 = base; sub(/,Hostname="/, ",GPU_I_PROFILE=\"3g.20gb\",GPU_I_ID=\"2\",Hostname=\"", i2)
	print i1; print i2
}' "$rec/l40s-idle-node.prom" >"$out/a100-mig.prom"

# Kubernetes mode on a GPU no pod holds: older dcgm-exporter versions write the pod labels
# with empty values (as in NVIDIA/dcgm-exporter#129 and NVIDIA/gpu-operator#687).
sed 's/"} /",container="",namespace="",pod=""} /' "$rec/t4-busy-no-help.prom" >"$out/t4-empty-pod-labels.prom"

# dcgm-exporter --kubernetes-use-old-namespace (-o) spells the pod labels pod_name,
# pod_namespace and container_name.
sed 's/"} /",container_name="server",pod_name="chat-7d9f8b6c5-4xkqp",pod_namespace="day20"} /' \
	"$rec/t4-busy-no-help.prom" >"$out/t4-old-pod-labels.prom"

# Prometheus HTTP API answer to GET /api/v1/query?query={__name__=~"DCGM_FI_.*"}: an instant
# vector evaluated at one time. The T4 is scraped through a kube-prometheus ServiceMonitor
# (honorLabels false): the target's pod/namespace/container labels win and the exporter's own
# become exported_pod/exported_namespace/exported_container. The L40S is scraped by a static job.
# Labels are sorted by name and values formatted as Prometheus does (shortest float).
awk -v ts=1764485400.123 '
function sortkeys(arr, keys,    n, k, i, j, t) {
	n = 0
	for (k in arr) keys[++n] = k
	for (i = 2; i <= n; i++) {
		t = keys[i]
		for (j = i - 1; j > 0 && keys[j] > t; j--) keys[j + 1] = keys[j]
		keys[j + 1] = t
	}
	return n
}
/^#/ { next }
{
	name = $0; sub(/\{.*/, "", name)
	lbl = $0; sub(/^[^{]*\{/, "", lbl); sub(/\} [^ ]*$/, "", lbl)
	val = $0; sub(/^.*\} /, "", val)
	split("", l)
	l["__name__"] = name
	while (match(lbl, /[A-Za-z_][A-Za-z0-9_]*="[^"]*"/)) {
		pair = substr(lbl, RSTART, RLENGTH)
		lbl = substr(lbl, RSTART + RLENGTH)
		eq = index(pair, "=")
		l[substr(pair, 1, eq - 1)] = substr(pair, eq + 2, length(pair) - eq - 2)
	}
	if (FILENAME ~ /t4-/) {
		l["exported_container"] = "server"; l["exported_namespace"] = "day20"; l["exported_pod"] = "chat-7d9f8b6c5-4xkqp"
		l["container"] = "nvidia-dcgm-exporter"; l["endpoint"] = "gpu-metrics"; l["instance"] = "10.42.3.17:9400"
		l["job"] = "nvidia-dcgm-exporter"; l["namespace"] = "gpu-operator"; l["pod"] = "nvidia-dcgm-exporter-7xk2p"
		l["service"] = "nvidia-dcgm-exporter"
	} else {
		l["instance"] = "10.42.1.9:9400"; l["job"] = "dcgm"
	}
	n = sortkeys(l, keys)
	s = ""
	for (i = 1; i <= n; i++) s = s (i > 1 ? "," : "") "\"" keys[i] "\":\"" l[keys[i]] "\""
	v = sprintf("%.15g", val + 0)
	results[++count] = "{\"metric\":{" s "},\"value\":[" ts ",\"" v "\"]}"
}
END {
	printf "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
	for (i = 1; i <= count; i++) printf "%s%s", (i > 1 ? "," : ""), results[i]
	print "]}}"
}' "$rec/t4-busy-no-help.prom" "$rec/l40s-idle-node.prom" >"$out/prometheus-query.json"

# DRA (KUBERNETES_ENABLE_DRA): the time-sliced GPU held by one ResourceClaim the three pods
# share. dcgm-exporter's DRA path (kubernetes.go, commit d5e5f510) sets pod, namespace and
# container on each pod's copy of the device's series and adds dra_claim_name,
# dra_claim_namespace, dra_driver_name, dra_pool_name and dra_device_name (pool: the node, as
# NVIDIA's DRA driver names its pools; device: gpu-<minor>).
sed 's/,pod="\([^"]*\)"}/,pod="\1",dra_claim_name="shared-l40s",dra_claim_namespace="day20",dra_driver_name="gpu.nvidia.com",dra_pool_name="gpu1-wl8sg",dra_device_name="gpu-0"}/' \
  "$out/l40s-time-sliced.prom" >"$out/l40s-dra-shared-claim.prom"
