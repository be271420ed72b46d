{{/* The chart's name, fullname and labels. */}}
{{- define "hitlbot.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "hitlbot.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "hitlbot.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hitlbot.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "hitlbot.labels" -}}
{{ include "hitlbot.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
hitlbot.config is the config.yaml the pods read: the values' config with
what the chart owns set over it (listen address, public, the store). It
refuses what cannot work: several replicas on the in-process store, more
Feishu long connections than an app may hold.
*/}}
{{- define "hitlbot.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- $server := dict "listen" "0.0.0.0:8080" "public" true "data_dir" "/data" -}}
{{- $_ := set $cfg "server" (mustMergeOverwrite (get $cfg "server" | default dict) $server) -}}
{{- if .Values.redis.url -}}
{{- $redis := dict "url" .Values.redis.url -}}
{{- if .Values.secrets.redisPasswordKey -}}
{{- if not .Values.secrets.existingSecret -}}
{{- fail "secrets.redisPasswordKey is set but secrets.existingSecret is empty: name the Secret that holds the Redis password" -}}
{{- end -}}
{{- $_ := set $redis "password_file" (printf "/run/secrets/hitlbot/%s" .Values.secrets.redisPasswordKey) -}}
{{- end -}}
{{- $store := dict "backend" "redis" "redis" $redis -}}
{{- $_ := set $cfg "store" (mustMergeOverwrite (get $cfg "store" | default dict) $store) -}}
{{- else if gt (int .Values.replicaCount) 1 -}}
{{- fail (printf "replicaCount is %d but redis.url is empty: replicas share approvals, claims and grants through Redis; set redis.url, or replicaCount: 1 for one node on the in-process store" (int .Values.replicaCount)) -}}
{{- end -}}
{{- $feishu := dig "channels" "feishu" (dict) $cfg -}}
{{- if and (get $feishu "enabled") (ne (get $feishu "mode" | default "long_connection") "webhook") (gt (int .Values.replicaCount) 50) -}}
{{- fail "Feishu allows at most 50 long connections per app and each replica opens one: use channels.feishu.mode: webhook (with the ingress) beyond 50 replicas" -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}
