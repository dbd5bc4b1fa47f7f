{{/*
The chart name, or nameOverride.
*/}}
{{- define "mcpd.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: fullnameOverride, else the release name (plus the chart name
unless the release name contains it). Truncated to 63 characters (DNS label);
suffixed names ("-redis", "-metrics") use mcpd.fullnameShort.
*/}}
{{- define "mcpd.fullname" -}}
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

{{/* The full name cut so that "-metrics" still fits in 63 characters. */}}
{{- define "mcpd.fullnameShort" -}}
{{- include "mcpd.fullname" . | trunc 55 | trimSuffix "-" }}
{{- end }}

{{/* chart label: name-version. */}}
{{- define "mcpd.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "mcpd.labels" -}}
helm.sh/chart: {{ include "mcpd.chart" . }}
{{ include "mcpd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mcpd
{{- end }}

{{/* Labels that select mcpd's pods (never change them: selectors are immutable). */}}
{{- define "mcpd.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcpd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{/* Labels of the bundled Redis. */}}
{{- define "mcpd.redis.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcpd.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: redis
{{- end }}

{{- define "mcpd.redis.labels" -}}
helm.sh/chart: {{ include "mcpd.chart" . }}
{{ include "mcpd.redis.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.redis.bundled.image.tag | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mcpd
{{- end }}

{{/* Common labels with another component (metrics Service, dashboard...). */}}
{{- define "mcpd.componentLabels" -}}
helm.sh/chart: {{ include "mcpd.chart" .ctx }}
app.kubernetes.io/name: {{ include "mcpd.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/version: {{ .ctx.Values.image.tag | default .ctx.Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: mcpd
{{- end }}

{{- define "mcpd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcpd.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mcpd.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{- define "mcpd.redis.fullname" -}}
{{- printf "%s-redis" (include "mcpd.fullnameShort" .) }}
{{- end }}

{{- define "mcpd.metrics.fullname" -}}
{{- printf "%s-metrics" (include "mcpd.fullnameShort" .) }}
{{- end }}

{{/* "redis" when mcpd uses Redis, else "memory". */}}
{{- define "mcpd.storeBackend" -}}
{{- if or .Values.redis.bundled.enabled .Values.redis.url .Values.redis.existingSecretUrlKey }}redis{{ else }}memory{{ end }}
{{- end }}

{{/* The most replicas that can run at once (HPA max when autoscaling). */}}
{{- define "mcpd.maxReplicas" -}}
{{- if .Values.autoscaling.enabled }}{{ int .Values.autoscaling.maxReplicas }}{{ else }}{{ int .Values.replicaCount }}{{ end }}
{{- end }}

{{/* The password-less Redis URL the ConfigMap carries. */}}
{{- define "mcpd.redisUrl" -}}
{{- if .Values.redis.bundled.enabled }}
{{- printf "redis://%s:6379/0" (include "mcpd.redis.fullname" .) }}
{{- else }}
{{- .Values.redis.url }}
{{- end }}
{{- end }}

{{/* The effective preStop sleep and termination grace period. */}}
{{- define "mcpd.terminationGracePeriodSeconds" -}}
{{- $sleep := int .Values.lifecycle.preStopSleepSeconds }}
{{- $grace := int .Values.mcpd.shutdownGraceSeconds }}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds }}
{{- add $sleep $grace 5 }}
{{- else }}
{{- int .Values.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/*
The header mcpd takes an anonymous client's address from (rate_limit.client_ip_header;
empty: the TCP peer). "auto": X-Real-IP behind the chart's own Ingress when its
controller overwrites that header (ingress-nginx, Traefik) or is told to by the
chart (HAProxy: see ingress.yaml), else empty.
*/}}
{{- define "mcpd.clientIpHeader" -}}
{{- $h := .Values.rateLimit.clientIpHeader }}
{{- if eq $h "auto" }}
{{- if and .Values.ingress.enabled (has .Values.ingress.controller (list "nginx" "traefik" "haproxy")) }}X-Real-IP{{ end }}
{{- else }}
{{- $h }}
{{- end }}
{{- end }}

{{/* Where the skill folders are mounted (skills.dir). */}}
{{- define "mcpd.skillsDir" -}}
/etc/mcpd/skills
{{- end }}

{{/* Where the policy ConfigMap is mounted (policy.files). */}}
{{- define "mcpd.policyDir" -}}
/etc/mcpd/policies
{{- end }}

{{/* Where each upstreamSecrets Secret is mounted, as <dir>/<name> (its keys are files for [upstream.credentials] *_file). */}}
{{- define "mcpd.upstreamSecretsDir" -}}
/etc/mcpd/secrets
{{- end }}

{{/* The public URL of the MCP endpoint (auth.resource), derived when unset. */}}
{{- define "mcpd.resourceUrl" -}}
{{- if .Values.auth.resource }}
{{- .Values.auth.resource }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- $host := (index .Values.ingress.hosts 0).host }}
{{- $scheme := "http" }}
{{- range .Values.ingress.tls }}{{ if has $host (.hosts | default list) }}{{ $scheme = "https" }}{{ end }}{{ end }}
{{- printf "%s://%s%s" $scheme $host .Values.mcpd.path }}
{{- else if and .Values.httpRoute.enabled .Values.httpRoute.hostnames }}
{{- printf "https://%s%s" (index .Values.httpRoute.hostnames 0) .Values.mcpd.path }}
{{- end }}
{{- end }}

{{/*
Refuses values that cannot work, each with a message saying why. Included by
the Deployment (so `helm install` and `helm template` both stop).
*/}}
{{- define "mcpd.validate" -}}
{{- $max := include "mcpd.maxReplicas" . | int }}
{{- $store := include "mcpd.storeBackend" . }}
{{- if and (gt $max 1) (eq $store "memory") }}
{{- fail (printf "\n\nmcpd: %d replicas with the in-memory store would break clients: without Redis, sessions and SSE event logs live inside one process, so a request routed to another replica finds no session (404) and a resumed stream finds no events. Configure Redis (redis.url, redis.existingSecret + redis.existingSecretUrlKey, or redis.bundled.enabled=true for trying out), or run 1 replica (replicaCount: 1, autoscaling.enabled: false)." $max) }}
{{- end }}
{{- if and (gt $max 1) (not .Values.mcpd.stateKeys.existingSecret) (not (dig "stateless" "state_keys" nil .Values.mcpd.config)) }}
{{- fail (printf "\n\nmcpd: %d replicas need shared keys for stateless-era requestState (each process otherwise seals with its own random key, and a retry that lands on another replica is refused). Create a Secret, e.g.\n  kubectl create secret generic mcpd-state-keys --from-literal=state-keys=\"k1:$(head -c32 /dev/urandom | base64)\"\nand set mcpd.stateKeys.existingSecret=mcpd-state-keys." $max) }}
{{- end }}
{{- if and .Values.redis.bundled.enabled (or .Values.redis.url .Values.redis.existingSecretUrlKey) }}
{{- fail "\n\nmcpd: redis.bundled.enabled and an external Redis (redis.url / redis.existingSecretUrlKey) are both set; choose one." }}
{{- end }}
{{- if and (or .Values.redis.existingSecretPasswordKey .Values.redis.existingSecretUrlKey) (not .Values.redis.existingSecret) }}
{{- fail "\n\nmcpd: redis.existingSecretPasswordKey / redis.existingSecretUrlKey name a key of redis.existingSecret, which is empty." }}
{{- end }}
{{- if and .Values.redis.existingSecretPasswordKey (not .Values.redis.bundled.enabled) (not .Values.redis.url) (not .Values.redis.existingSecretUrlKey) }}
{{- fail "\n\nmcpd: redis.existingSecretPasswordKey is set but there is no redis.url to add the password to." }}
{{- end }}
{{- if and .Values.redis.url (not (regexMatch "^(redis|rediss|redis\\+unix)://" .Values.redis.url)) }}
{{- fail (printf "\n\nmcpd: redis.url %q must start with redis://, rediss:// or redis+unix://." .Values.redis.url) }}
{{- end }}
{{- if and .Values.redis.url .Values.redis.existingSecretPasswordKey (contains "@" .Values.redis.url) }}
{{- fail "\n\nmcpd: redis.url already carries credentials (user:password@); keep the password only in redis.existingSecret." }}
{{- end }}
{{- if and .Values.auth.enabled (not .Values.auth.jwksUrl) (not .Values.auth.jwksSecret.name) (not .Values.auth.introspection.url) }}
{{- fail "\n\nmcpd: auth.enabled needs the authorization server's keys: auth.jwksUrl, or auth.jwksSecret.name (a Secret holding a JWKS document), or auth.introspection.url for opaque tokens." }}
{{- end }}
{{- if and .Values.auth.enabled .Values.auth.introspection.url (or (not .Values.auth.introspection.clientId) (not .Values.auth.introspection.existingSecret)) }}
{{- fail "\n\nmcpd: auth.introspection.url needs mcpd's client credentials there: auth.introspection.clientId and auth.introspection.existingSecret (a Secret holding the client secret under auth.introspection.secretKey)." }}
{{- end }}
{{- if and .Values.auth.enabled (not .Values.auth.authorizationServers) }}
{{- fail "\n\nmcpd: auth.enabled needs auth.authorizationServers (at least one authorization server URL, advertised to clients in the protected-resource metadata)." }}
{{- end }}
{{- if and .Values.auth.enabled (not .Values.auth.issuer) }}
{{- fail "\n\nmcpd: auth.enabled needs auth.issuer, the iss claim tokens must carry (usually the authorization server's URL)." }}
{{- end }}
{{- if and .Values.auth.enabled .Values.auth.jwksUrl .Values.auth.jwksSecret.name }}
{{- fail "\n\nmcpd: set auth.jwksUrl or auth.jwksSecret.name, not both." }}
{{- end }}
{{- if and .Values.auth.enabled (not (include "mcpd.resourceUrl" .)) }}
{{- fail "\n\nmcpd: auth.enabled needs auth.resource, the public URL of the MCP endpoint (the token audience), e.g. https://mcp.example.com/mcp (derived automatically only from an ingress or HTTPRoute host)." }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.existingSecret) }}
{{- fail "\n\nmcpd: tls.enabled needs tls.existingSecret, a kubernetes.io/tls Secret with tls.crt and tls.key." }}
{{- end }}
{{- if or (hasKey (.Values.mcpd.config.server | default dict) "listen") (hasKey (.Values.mcpd.config.admin | default dict) "listen") }}
{{- fail "\n\nmcpd: set the listen ports with mcpd.port and mcpd.adminPort, not mcpd.config.server.listen / mcpd.config.admin.listen (the container ports, probes and Services follow mcpd.port/adminPort)." }}
{{- end }}
{{- if .Values.skills.enabled }}
{{- $s := .Values.skills }}
{{- if and (not $s.configMap.name) (not $s.volume) }}
{{- fail (printf "\n\nmcpd: skills.enabled needs the skill folders, mounted at %s: skills.configMap.name (an existing ConfigMap, with skills.configMap.items mapping its keys to <skill>/<path>) or skills.volume (a volume source, e.g. {persistentVolumeClaim: {claimName: mcpd-skills}})." (include "mcpd.skillsDir" .)) }}
{{- end }}
{{- if and $s.configMap.name $s.volume }}
{{- fail "\n\nmcpd: set skills.configMap or skills.volume, not both (one directory holds the skills)." }}
{{- end }}
{{- if and $s.configMap.name (not $s.configMap.items) }}
{{- fail "\n\nmcpd: skills.configMap.items is empty. A ConfigMap cannot hold folders, so each key must be mapped to its file's <skill>/<path>, e.g. [{key: pdf.SKILL.md, path: pdf/SKILL.md}]; mounted whole, every key would be a file at the top of the directory, in no skill folder." }}
{{- end }}
{{- if hasKey $s.volume "name" }}
{{- fail "\n\nmcpd: skills.volume is a volume source without a name (the chart names the volume), e.g. {persistentVolumeClaim: {claimName: mcpd-skills}}." }}
{{- end }}
{{- if hasKey (.Values.mcpd.config.skills | default dict) "dir" }}
{{- fail (printf "\n\nmcpd: skills.enabled sets skills.dir to %s, where the skills are mounted; remove mcpd.config.skills.dir." (include "mcpd.skillsDir" .)) }}
{{- end }}
{{- end }}
{{- if .Values.policy.enabled }}
{{- if not .Values.auth.enabled }}
{{- fail "\n\nmcpd: policy.enabled needs auth.enabled: a Cedar policy decides per principal (the token's subject, claims and tenant), and mcpd refuses [policy] without [auth]. Turn on auth (docs/operations.md, \"Auth\"), or set policy.enabled=false." }}
{{- end }}
{{- if not .Values.policy.configMap.name }}
{{- fail (printf "\n\nmcpd: policy.enabled needs policy.configMap.name, an existing ConfigMap whose keys are NAME.cedar policy files (mounted at %s). Create one, e.g.\n  kubectl create configmap mcpd-policies --from-file=analysts.cedar\nand set policy.configMap.name=mcpd-policies." (include "mcpd.policyDir" .)) }}
{{- end }}
{{- if hasKey (.Values.mcpd.config.policy | default dict) "files" }}
{{- fail (printf "\n\nmcpd: policy.enabled sets policy.files to [%q], where the ConfigMap is mounted; remove mcpd.config.policy.files." (include "mcpd.policyDir" .)) }}
{{- end }}
{{- end }}
{{- $seen := dict }}
{{- range $i, $name := .Values.upstreamSecrets }}
{{- $ok := false }}
{{- if kindIs "string" $name }}{{ $ok = and (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name) (le (len $name) 47) }}{{ end }}
{{- if not $ok }}
{{- fail (printf "\n\nmcpd: upstreamSecrets[%d] %q cannot be mounted: each entry is the name of an existing Secret, a DNS-1123 label of at most 47 characters (lower-case letters, digits and '-', starting and ending with a letter or digit), since it names the volume upstream-secret-<name> (at most 63 characters) and the directory %s/<name>. Copy the Secret under such a name." $i (toString $name) (include "mcpd.upstreamSecretsDir" $)) }}
{{- end }}
{{- if hasKey $seen (toString $name) }}
{{- fail (printf "\n\nmcpd: upstreamSecrets lists %q twice; each Secret is mounted once, at %s/%s." $name (include "mcpd.upstreamSecretsDir" $) $name) }}
{{- end }}
{{- $_ := set $seen (toString $name) true }}
{{- end }}
{{- $tgps := include "mcpd.terminationGracePeriodSeconds" . | int }}
{{- $needed := add (int .Values.lifecycle.preStopSleepSeconds) (int .Values.mcpd.shutdownGraceSeconds) }}
{{- if le $tgps $needed }}
{{- fail (printf "\n\nmcpd: terminationGracePeriodSeconds (%d) must exceed lifecycle.preStopSleepSeconds + mcpd.shutdownGraceSeconds (%d), or the pod is killed before in-flight requests finish." $tgps $needed) }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "\n\nmcpd: autoscaling.minReplicas is greater than autoscaling.maxReplicas." }}
{{- end }}
{{- if and .Values.autoscaling.enabled (not (kindIs "invalid" .Values.autoscaling.targetCPUUtilizationPercentage)) (not (dig "requests" "cpu" nil (.Values.resources | default dict))) }}
{{- fail "\n\nmcpd: autoscaling.targetCPUUtilizationPercentage needs resources.requests.cpu (utilisation is measured against the request)." }}
{{- end }}
{{- if and .Values.autoscaling.enabled (kindIs "invalid" .Values.autoscaling.targetCPUUtilizationPercentage) (kindIs "invalid" .Values.autoscaling.targetMemoryUtilizationPercentage) }}
{{- fail "\n\nmcpd: autoscaling.enabled needs targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage." }}
{{- end }}
{{- end }}

{{/* A TOML key: bare when it can be, else quoted. */}}
{{- define "mcpd.toml.key" -}}
{{- if regexMatch "^[A-Za-z0-9_-]+$" . }}{{ . }}{{ else }}{{ toJson . }}{{ end }}
{{- end }}

{{/*
What a value is in TOML: "table" (a map), "tables" (a non-empty list of
maps: an array of tables), "mixed" (a list of maps and other values, which
TOML cannot write) or "value" (JSON scalars and arrays of scalars are valid
TOML).
*/}}
{{- define "mcpd.toml.kind" -}}
{{- if kindIs "map" . }}table
{{- else if kindIs "slice" . }}
{{- /* Nested, not and: Go before 1.18 (Helm 3.8) evaluates every operand. */}}
{{- $maps := 0 }}
{{- range . }}{{ if kindIs "map" . }}{{ $maps = add1 $maps }}{{ end }}{{ end }}
{{- if eq (int $maps) 0 }}value{{ else if eq (int $maps) (len .) }}tables{{ else }}mixed{{ end }}
{{- else }}value
{{- end }}
{{- end }}

{{/*
A TOML table: (dict "name" "auth.tool_scopes" "table" $map), or an element
of an array of tables with "array" true ([[name]], always written). Scalar
keys first, then sub-tables, then arrays of tables, each sorted; null
values are left out (unset).
*/}}
{{- define "mcpd.toml.table" -}}
{{- $name := .name }}
{{- $table := .table }}
{{- $array := .array | default false }}
{{- $scalars := list }}
{{- $tables := list }}
{{- $arrays := list }}
{{- range $k := keys $table | sortAlpha }}
{{- $v := get $table $k }}
{{- $kind := include "mcpd.toml.kind" $v }}
{{- if eq $kind "table" }}{{ $tables = append $tables $k }}
{{- else if eq $kind "tables" }}{{ $arrays = append $arrays $k }}
{{- else if eq $kind "mixed" }}{{ fail (printf "\n\nmcpd: mcpd.config: %s.%s mixes maps and other values in one list, which TOML cannot write." $name $k) }}
{{- else if not (kindIs "invalid" $v) }}{{ $scalars = append $scalars $k }}{{ end }}
{{- end }}
{{- if or $array $scalars (not (or $tables $arrays)) }}
{{- if $array }}{{ printf "\n\n[[%s]]" $name }}{{ else }}{{ printf "\n\n[%s]" $name }}{{ end }}
{{- range $k := $scalars }}
{{- printf "\n%s = %s" (include "mcpd.toml.key" $k) (get $table $k | toJson) }}
{{- end }}
{{- end }}
{{- range $k := $tables }}
{{- include "mcpd.toml.table" (dict "name" (printf "%s.%s" $name (include "mcpd.toml.key" $k)) "table" (get $table $k)) }}
{{- end }}
{{- range $k := $arrays }}
{{- $sub := printf "%s.%s" $name (include "mcpd.toml.key" $k) }}
{{- range $element := get $table $k }}
{{- include "mcpd.toml.table" (dict "name" $sub "table" $element "array" true) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The configuration as a map of sections (before the user's mcpd.config). */}}
{{- define "mcpd.configMap" -}}
{{- $v := .Values }}
{{- $hosts := list "localhost" "127.0.0.1" "[::1]" }}
{{- if $v.mcpd.allowServiceHosts }}
{{- $svc := include "mcpd.fullname" . }}
{{- $hosts = concat $hosts (list $svc (printf "%s.%s" $svc .Release.Namespace) (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace)) }}
{{- end }}
{{- if $v.ingress.enabled }}{{ range $v.ingress.hosts }}{{ $hosts = append $hosts .host }}{{ end }}{{ end }}
{{- if $v.httpRoute.enabled }}{{ $hosts = concat $hosts $v.httpRoute.hostnames }}{{ end }}
{{- $hosts = concat $hosts $v.mcpd.allowedHosts | uniq }}
{{- $server := dict "listen" (printf "0.0.0.0:%d" (int $v.mcpd.port)) "toolset" $v.mcpd.toolset "shutdown_grace_secs" (int $v.mcpd.shutdownGraceSeconds) }}
{{- $http := dict "path" $v.mcpd.path "allowed_hosts" $hosts "allowed_origins" $v.mcpd.allowedOrigins }}
{{- $store := dict "backend" (include "mcpd.storeBackend" .) }}
{{- $url := include "mcpd.redisUrl" . }}
{{- if $url }}{{ $_ := set $store "redis_url" $url }}{{ end }}
{{- if $v.redis.cluster }}{{ $_ := set $store "redis_cluster" true }}{{ end }}
{{- if $v.redis.sentinelService }}{{ $_ := set $store "redis_sentinel_service" $v.redis.sentinelService }}{{ end }}
{{- $cfg := dict "server" $server "http" $http "store" $store "admin" (dict "listen" (printf "0.0.0.0:%d" (int $v.mcpd.adminPort))) "log" (dict "format" $v.mcpd.log.format "level" $v.mcpd.log.level) }}
{{- if $v.auth.enabled }}
{{- $auth := dict "enabled" true "resource" (include "mcpd.resourceUrl" .) "leeway_seconds" (int $v.auth.leewaySeconds) "hide_unauthorized_tools" $v.auth.hideUnauthorizedTools }}
{{- if $v.auth.algorithms }}{{ $_ := set $auth "algorithms" $v.auth.algorithms }}{{ end }}
{{- if $v.auth.authorizationServers }}{{ $_ := set $auth "authorization_servers" $v.auth.authorizationServers }}{{ end }}
{{- if $v.auth.issuer }}{{ $_ := set $auth "issuer" $v.auth.issuer }}{{ end }}
{{- if $v.auth.jwksUrl }}{{ $_ := set $auth "jwks_url" $v.auth.jwksUrl }}{{ end }}
{{- if $v.auth.jwksSecret.name }}{{ $_ := set $auth "jwks_file" (printf "/etc/mcpd/auth/%s" $v.auth.jwksSecret.key) }}{{ end }}
{{- if $v.auth.requiredScopes }}{{ $_ := set $auth "required_scopes" $v.auth.requiredScopes }}{{ end }}
{{- if $v.auth.scopesSupported }}{{ $_ := set $auth "scopes_supported" $v.auth.scopesSupported }}{{ end }}
{{- if $v.auth.toolScopes }}{{ $_ := set $auth "tool_scopes" $v.auth.toolScopes }}{{ end }}
{{- if $v.auth.introspection.url }}{{ $_ := set $auth "introspection_url" $v.auth.introspection.url }}{{ $_ := set $auth "introspection_client_id" $v.auth.introspection.clientId }}{{ end }}
{{- $_ := set $auth "dpop" $v.auth.dpop }}
{{- if $v.auth.tenantClaim }}{{ $_ := set $auth "tenant_claim" $v.auth.tenantClaim }}{{ end }}
{{- if ne $v.auth.tenantHeader "X-Mcpd-Tenant" }}{{ $_ := set $auth "tenant_header" $v.auth.tenantHeader }}{{ end }}
{{- $_ := set $cfg "auth" $auth }}
{{- end }}
{{- if $v.tls.enabled }}
{{- $_ := set $cfg "tls" (dict "cert_file" "/etc/mcpd/tls/tls.crt" "key_file" "/etc/mcpd/tls/tls.key") }}
{{- end }}
{{- /* The limits only when enabled (else mcpd's defaults); the client IP
       header always, since limits.max_sessions_per_client and mcpd's
       default session limit key on it too. */}}
{{- $rl := dict }}
{{- if $v.rateLimit.enabled }}
{{- $rl = dict "requests_per_second" $v.rateLimit.requestsPerSecond "request_burst" $v.rateLimit.requestBurst "sessions_per_minute" $v.rateLimit.sessionsPerMinute "session_burst" $v.rateLimit.sessionBurst }}
{{- end }}
{{- $clientIp := include "mcpd.clientIpHeader" . }}
{{- if $clientIp }}{{ $_ := set $rl "client_ip_header" $clientIp }}{{ end }}
{{- if $rl }}{{ $_ := set $cfg "rate_limit" $rl }}{{ end }}
{{- if $v.skills.enabled }}
{{- $_ := set $cfg "skills" (dict "dir" (include "mcpd.skillsDir" .) "reload_secs" (int $v.skills.reloadSecs)) }}
{{- end }}
{{- if $v.policy.enabled }}
{{- $_ := set $cfg "policy" (dict "files" (list (include "mcpd.policyDir" .)) "reload_secs" (int $v.policy.reloadSecs)) }}
{{- end }}
{{- if $v.tracing.enabled }}
{{- $_ := set $cfg "tracing" (dict "otlp_endpoint" $v.tracing.otlpEndpoint "service_name" ($v.tracing.serviceName | default (include "mcpd.fullname" .)) "sample_ratio" $v.tracing.sampleRatio) }}
{{- end }}
{{- $merged := mustMergeOverwrite $cfg (deepCopy ($v.mcpd.config | default dict)) }}
{{- toJson $merged }}
{{- end }}

{{/* mcpd.toml, rendered from mcpd.configMap. */}}
{{- define "mcpd.toml" -}}
# mcpd configuration, generated by the mcpd Helm chart (docs/configuration.md).
{{- $cfg := include "mcpd.configMap" . | fromJson }}
{{- range $section := keys $cfg | sortAlpha }}
{{- $v := get $cfg $section }}
{{- $kind := include "mcpd.toml.kind" $v }}
{{- if eq $kind "table" }}
{{- include "mcpd.toml.table" (dict "name" (include "mcpd.toml.key" $section) "table" $v) }}
{{- else if eq $kind "tables" }}
{{- /* [[upstream]]: one table per element. */}}
{{- range $element := $v }}
{{- include "mcpd.toml.table" (dict "name" (include "mcpd.toml.key" $section) "table" $element "array" true) }}
{{- end }}
{{- else if not (kindIs "invalid" $v) }}
{{- fail (printf "\n\nmcpd: mcpd.config.%s must be a section (a map) or, like upstream, a list of maps (an array of tables)." $section) }}
{{- end }}
{{- end }}
{{- end }}
