{{- /*
Names. Objects carry the names config/default gives them, which are
MetalLB's manifest names (Deployment controller, DaemonSet speaker, Secret
memberlist, ...): selectors, network policies and dashboards written for
MetalLB keep matching, and kustomize and Helm install the same objects
(test/chart compares them). One release per cluster: the cluster-scoped
objects (ClusterRoles, the admission policy) have fixed names too.
*/ -}}

{{- define "steadylb.controllerServiceAccount" -}}
{{- if .Values.controller.serviceAccount.create -}}
{{- default "controller" .Values.controller.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.controller.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "steadylb.speakerServiceAccount" -}}
{{- if .Values.speaker.serviceAccount.create -}}
{{- default "speaker" .Values.speaker.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.speaker.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "steadylb.memberlistSecret" -}}
{{- default "memberlist" .Values.speaker.secretName -}}
{{- end -}}

{{- /* Labels every object gets, beside the component's own. */ -}}
{{- define "steadylb.labels" -}}
app.kubernetes.io/name: steadylb
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- /*
The component's selector labels, MetalLB's: the speakers find each other
by them (METALLB_ML_LABELS), and a Deployment's selector can't change, so
an upgrade from config/default keeps them. Call with (list $ "speaker").
*/ -}}
{{- define "steadylb.selectorLabels" -}}
app: metallb
component: {{ index . 1 }}
{{- end -}}

{{- define "steadylb.componentLabels" -}}
{{ include "steadylb.selectorLabels" . }}
{{ include "steadylb.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- /*
The image of a component: repository@digest when a digest is given (what
`make images` prints), else repository:tag with the chart's appVersion as
the default tag. Call with (list $ .Values.controller.image).
*/ -}}
{{- define "steadylb.image" -}}
{{- $root := index . 0 -}}
{{- $image := index . 1 -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default $root.Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}

{{- /*
MetalLB's log levels are all, debug, info, warn, error and none; steadylb's
those of zap. all and none map to the nearest.
*/ -}}
{{- define "steadylb.logLevel" -}}
{{- $l := . | toString -}}
{{- if eq $l "all" }}debug{{ else if eq $l "none" }}error{{ else }}{{ $l }}{{ end -}}
{{- end -}}

{{- /*
The rules of one kind (ClusterRole or Role) from a role file that
`make generate` copied from config/rbac, so the chart grants exactly what
the markers in the code ask for. A rule naming the Secret memberlist gets
the configured name (speaker.secretName). Call with (list $ "files/rbac/controller.yaml" "Role").
*/ -}}
{{- define "steadylb.generatedRules" -}}
{{- $root := index . 0 -}}
{{- $kind := index . 2 -}}
{{- $found := false -}}
{{- range $doc := regexSplit "(?m)^---$" ($root.Files.Get (index . 1)) -1 -}}
{{- $obj := fromYaml $doc -}}
{{- if and $obj (eq (toString $obj.kind) $kind) -}}
{{- $found = true -}}
{{- $rules := list -}}
{{- range $rule := $obj.rules -}}
{{- if and (has "secrets" (default list $rule.resources)) (has "memberlist" (default list $rule.resourceNames)) -}}
{{- $rule = set (deepCopy $rule) "resourceNames" (list (include "steadylb.memberlistSecret" $root)) -}}
{{- end -}}
{{- $rules = append $rules $rule -}}
{{- end -}}
{{- toYaml $rules -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "%s has no %s: run make generate" (index . 1) $kind) -}}
{{- end -}}
{{- end -}}

{{- /* A probe's timing fields from MetalLB's probe values. */ -}}
{{- define "steadylb.probeTiming" -}}
{{- if .initialDelaySeconds }}
initialDelaySeconds: {{ .initialDelaySeconds }}
{{- end }}
periodSeconds: {{ .periodSeconds }}
timeoutSeconds: {{ .timeoutSeconds | default 1 }}
successThreshold: {{ .successThreshold | default 1 }}
failureThreshold: {{ .failureThreshold }}
{{- end -}}
