{{/* The chart name, or nameOverride. */}}
{{- define "schedlens.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every resource name: fullnameOverride, else release + chart name (once). */}}
{{- define "schedlens.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The namespace of every namespaced object. */}}
{{- define "schedlens.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{- define "schedlens.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object; call with (dict "ctx" $ "component" "api"). */}}
{{- define "schedlens.labels" -}}
helm.sh/chart: {{ include "schedlens.chart" .ctx }}
{{ include "schedlens.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: schedlens
{{- end }}

{{/* Selector labels; call with (dict "ctx" $ "component" "api"). */}}
{{- define "schedlens.selectorLabels" -}}
app.kubernetes.io/name: {{ include "schedlens.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end }}

{{- define "schedlens.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "schedlens.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image reference; call with (dict "ctx" $ "image" .Values.image). */}}
{{- define "schedlens.imageRef" -}}
{{- $registry := default .image.registry .ctx.Values.global.imageRegistry }}
{{- $tag := default .ctx.Chart.AppVersion .image.tag }}
{{- $ref := printf "%s:%s" .image.repository $tag }}
{{- if $registry }}{{ $ref = printf "%s/%s" $registry $ref }}{{ end }}
{{- if .image.digest }}{{ $ref = printf "%s@%s" $ref .image.digest }}{{ end }}
{{- $ref }}
{{- end }}

{{- define "schedlens.image" -}}
{{- include "schedlens.imageRef" (dict "ctx" . "image" .Values.image) }}
{{- end }}

{{/* imagePullSecrets of a pod: the global ones and the chart's. */}}
{{- define "schedlens.imagePullSecrets" -}}
{{- $secrets := concat .Values.global.imagePullSecrets .Values.imagePullSecrets }}
{{- with $secrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Placement and security of a schedlens pod; call with (dict "ctx" $ "c" .Values.api). */}}
{{- define "schedlens.podPlacement" -}}
{{- $v := .ctx.Values }}
{{- with (default $v.nodeSelector .c.nodeSelector) }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default $v.affinity .c.affinity) }}
affinity:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default $v.tolerations .c.tolerations) }}
tolerations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with (default $v.priorityClassName .c.priorityClassName) }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
{{- toYaml $v.podSecurityContext | nindent 2 }}
{{- include "schedlens.imagePullSecrets" .ctx }}
{{- end }}

{{/* Pod annotations: the common ones and the component's. */}}
{{- define "schedlens.podAnnotations" -}}
{{- $a := merge (deepCopy .c.podAnnotations) .ctx.Values.podAnnotations }}
{{- with $a }}
annotations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Environment common to every process. */}}
{{- define "schedlens.logEnv" -}}
- name: SCHEDLENS_LOG_FORMAT
  value: {{ .Values.log.format | quote }}
- name: SCHEDLENS_LOG_LEVEL
  value: {{ .Values.log.level | quote }}
{{- end }}

{{/* The NATS URL and the stream's limits (collector, correlator). */}}
{{- define "schedlens.natsEnv" -}}
{{- if .Values.quickstart.enabled }}
- name: SCHEDLENS_NATS_URL
  value: {{ printf "nats://%s-nats:4222" (include "schedlens.fullname" .) | quote }}
{{- else if .Values.nats.existingSecret }}
- name: SCHEDLENS_NATS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.nats.existingSecret }}
      key: {{ .Values.nats.urlKey }}
{{- else }}
- name: SCHEDLENS_NATS_URL
  value: {{ .Values.nats.url | quote }}
{{- end }}
- name: SCHEDLENS_STREAM_MAX_AGE
  value: {{ .Values.nats.stream.maxAge | quote }}
- name: SCHEDLENS_STREAM_MAX_BYTES
  value: {{ .Values.nats.stream.maxBytes | int64 | quote }}
- name: SCHEDLENS_STREAM_DUPLICATE_WINDOW
  value: {{ .Values.nats.stream.duplicateWindow | quote }}
{{- end }}

{{/* The Postgres URL and password (correlator, api). */}}
{{- define "schedlens.postgresEnv" -}}
{{- if .Values.quickstart.enabled }}
- name: SCHEDLENS_DATABASE_URL
  value: {{ printf "postgres://schedlens@%s-postgres:5432/schedlens?sslmode=disable" (include "schedlens.fullname" .) | quote }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "schedlens.fullname" . }}-quickstart-postgres
      key: password
{{- else }}
{{- $p := .Values.postgres }}
{{- if and $p.existingSecret $p.urlKey }}
- name: SCHEDLENS_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $p.existingSecret }}
      key: {{ $p.urlKey }}
{{- else }}
- name: SCHEDLENS_DATABASE_URL
  value: {{ $p.url | quote }}
{{- if and $p.existingSecret $p.passwordKey }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $p.existingSecret }}
      key: {{ $p.passwordKey }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* Liveness and readiness probes on a named port. */}}
{{- define "schedlens.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
    {{- if .ctx.Values.tls.secretName }}
    scheme: HTTPS
    {{- end }}
  periodSeconds: 10
  timeoutSeconds: 2
  failureThreshold: 6
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .port }}
    {{- if .ctx.Values.tls.secretName }}
    scheme: HTTPS
    {{- end }}
  periodSeconds: 5
  timeoutSeconds: 2
  failureThreshold: 3
{{- end }}

{{- /*
Authentication and TLS of a protected listener (the api, the collector's ingest): env, mounts and
volumes. schedlens.authEnv takes the root context.
*/ -}}
{{- define "schedlens.authEnv" -}}
{{- $a := .Values.auth }}
{{- if eq $a.mode "none" }}
- name: SCHEDLENS_INSECURE_NO_AUTH
  value: "true"
{{- else if eq $a.mode "token" }}
{{- if not $a.tokenSecret.name }}
{{- fail "auth.mode=token needs auth.tokenSecret.name: a Secret holding the token file" }}
{{- end }}
- name: SCHEDLENS_AUTH_TOKEN_FILE
  value: {{ printf "/etc/schedlens/auth/%s" $a.tokenSecret.key | quote }}
{{- else if eq $a.mode "kubernetes" }}
- name: SCHEDLENS_AUTH
  value: kubernetes
- name: SCHEDLENS_AUTH_GROUP
  value: {{ $a.kubernetes.group | quote }}
- name: SCHEDLENS_AUTH_RESOURCE
  value: {{ $a.kubernetes.resource | quote }}
{{- with $a.kubernetes.namespace }}
- name: SCHEDLENS_AUTH_NAMESPACE
  value: {{ . | quote }}
{{- end }}
{{- else }}
{{- fail (printf "auth.mode %q: want none, token or kubernetes" $a.mode) }}
{{- end }}
{{- if $a.metrics }}
- name: SCHEDLENS_AUTH_METRICS
  value: "true"
{{- end }}
{{- end }}

{{- /*
The api's -auth kubernetes scope rule (what a caller needs in a namespace to read it); the
collector's listeners read no namespace.
*/ -}}
{{- define "schedlens.scopeEnv" -}}
{{- $a := .Values.auth }}
{{- if eq $a.mode "kubernetes" }}
- name: SCHEDLENS_AUTH_SCOPE_RESOURCE
  value: {{ $a.kubernetes.scope.resource | quote }}
- name: SCHEDLENS_AUTH_SCOPE_VERB
  value: {{ $a.kubernetes.scope.verb | quote }}
{{- end }}
{{- end }}

{{- define "schedlens.tlsEnv" -}}
{{- if .Values.tls.secretName }}
- name: SCHEDLENS_TLS_CERT_FILE
  value: /etc/schedlens/tls/tls.crt
- name: SCHEDLENS_TLS_KEY_FILE
  value: /etc/schedlens/tls/tls.key
{{- end }}
{{- end }}

{{- /* volumeMounts (auth: whether this container authenticates) */ -}}
{{- define "schedlens.secretMounts" -}}
{{- if and .auth (eq .ctx.Values.auth.mode "token") }}
- name: auth-tokens
  mountPath: /etc/schedlens/auth
  readOnly: true
{{- end }}
{{- if .ctx.Values.tls.secretName }}
- name: tls
  mountPath: /etc/schedlens/tls
  readOnly: true
{{- end }}
{{- end }}

{{- define "schedlens.secretVolumes" -}}
{{- if and .auth (eq .ctx.Values.auth.mode "token") }}
- name: auth-tokens
  secret:
    secretName: {{ .ctx.Values.auth.tokenSecret.name }}
{{- end }}
{{- if .ctx.Values.tls.secretName }}
- name: tls
  secret:
    secretName: {{ .ctx.Values.tls.secretName }}
{{- end }}
{{- end }}
