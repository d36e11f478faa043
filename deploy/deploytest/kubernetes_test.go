// SPDX-License-Identifier: Apache-2.0

package deploytest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serializerjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// k8sScheme knows the API groups our manifests use; a kind outside it fails to decode.
var k8sScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(appsv1.AddToScheme(s))
	utilruntime.Must(autoscalingv2.AddToScheme(s))
	utilruntime.Must(policyv1.AddToScheme(s))
	utilruntime.Must(rbacv1.AddToScheme(s))
	return s
}()

// strictDecoder decodes YAML into the typed object of its apiVersion/kind and fails on unknown
// or duplicated fields (the Kubernetes API server's strict field validation).
var strictDecoder = serializerjson.NewSerializerWithOptions(serializerjson.DefaultMetaFactory, k8sScheme, k8sScheme,
	serializerjson.SerializerOptions{Yaml: true, Strict: true})

func decodeStrict(doc []byte) (runtime.Object, *schema.GroupVersionKind, error) {
	return strictDecoder.Decode(doc, nil, nil)
}

// decodeManifests strictly decodes every document of a repository file, failing t on any error.
func decodeManifests(t *testing.T, rel string) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for i, doc := range yamlDocs(readFile(t, rel)) {
		obj, gvk, err := decodeStrict(doc)
		require.NoError(t, err, "%s document %d", rel, i+1)
		require.NotEmpty(t, gvk.Kind, "%s document %d has no kind", rel, i+1)
		out = append(out, obj)
	}
	return out
}

// kubernetesManifestFiles are the YAML files under deploy/ that hold Kubernetes objects: every
// file in deploy/kubernetes/, and any other deploy/ YAML whose documents carry apiVersion and kind.
func kubernetesManifestFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, rel := range deployFiles(t, ".yaml", ".yml") {
		if filepath.Base(rel) == "kustomization.yaml" {
			continue // kustomize's own kind, checked in TestKustomization
		}
		if strings.HasPrefix(rel, filepath.Join("deploy", "kubernetes")+string(filepath.Separator)) {
			out = append(out, rel)
			continue
		}
		var probe struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
		}
		docs := yamlDocs(readFile(t, rel))
		if len(docs) > 0 && yaml.Unmarshal(docs[0], &probe) == nil && probe.APIVersion != "" && probe.Kind != "" {
			out = append(out, rel)
		}
	}
	return out
}

// TestKubernetesManifestsDecodeStrictly: every Kubernetes manifest decodes into its k8s.io/api type
// with unknown and duplicate fields rejected.
func TestKubernetesManifestsDecodeStrictly(t *testing.T) {
	files := kubernetesManifestFiles(t)
	kinds := map[string]int{}
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			for _, obj := range decodeManifests(t, rel) {
				gvk := obj.GetObjectKind().GroupVersionKind()
				kinds[gvk.Kind]++
			}
		})
	}
	// The list: StatefulSet, Service, ConfigMap, Secret template, HPA, PDB.
	for _, k := range []string{"StatefulSet", "Service", "ConfigMap", "Secret", "HorizontalPodAutoscaler", "PodDisruptionBudget"} {
		assert.Positive(t, kinds[k], "no %s among the manifests %v", k, files)
	}
}

// TestStrictDecodingRejectsMistakes: the decoder used above really is strict: a misspelled field,
// a duplicated field, a wrong type and an unknown kind are all refused.
func TestStrictDecodingRejectsMistakes(t *testing.T) {
	sts := string(readFile(t, "deploy/kubernetes/statefulset.yaml"))
	for name, doc := range map[string]string{
		"misspelled field": strings.Replace(sts, "serviceName:", "servicName:", 1),
		"duplicate field":  strings.Replace(sts, "  replicas: 3\n", "  replicas: 3\n  replicas: 4\n", 1),
		"wrong type":       strings.Replace(sts, "  replicas: 3\n", "  replicas: three\n", 1),
		"unknown kind":     strings.Replace(sts, "kind: StatefulSet", "kind: StatefulSets", 1),
	} {
		t.Run(name, func(t *testing.T) {
			require.NotEqual(t, sts, doc, "statefulset.yaml no longer has the text this case edits")
			_, _, err := decodeStrict([]byte(doc))
			require.Error(t, err)
		})
	}
}

func gatewayStatefulSet(t *testing.T) *appsv1.StatefulSet {
	t.Helper()
	objs := decodeManifests(t, "deploy/kubernetes/statefulset.yaml")
	require.Len(t, objs, 1)
	sts, ok := objs[0].(*appsv1.StatefulSet)
	require.True(t, ok)
	return sts
}

func gatewayContainer(t *testing.T) corev1.Container {
	t.Helper()
	cs := gatewayStatefulSet(t).Spec.Template.Spec.Containers
	require.Len(t, cs, 1)
	return cs[0]
}

// portOf extracts the port of a host:port default in a gateway.yaml ${env:X:-host:port}.
func gatewayDefaultPort(t *testing.T, gateway []byte, envName string) int32 {
	t.Helper()
	m := regexp.MustCompile(`\$\{env:` + envName + `:-[^}:]*:(\d+)\}`).FindSubmatch(gateway)
	require.NotNil(t, m, "gateway.yaml has no ${env:%s:-host:port}", envName)
	p, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return int32(p)
}

// TestManifestsAgree: the objects reference each other consistently and match gateway.yaml: the
// selectors select the pod, the Services target ports the container opens, and those are the
// ports gateway.yaml listens on; the config, secret and volume names exist; the queue directory is
// on the persistent volume; the HPA and PDB target the StatefulSet; the pods run as non-root.
func TestManifestsAgree(t *testing.T) {
	gateway := readFile(t, "config/gateway.yaml")
	sts := gatewayStatefulSet(t)
	pod := sts.Spec.Template
	c := gatewayContainer(t)

	sel, err := metaSelector(sts.Spec.Selector.MatchLabels)
	require.NoError(t, err)
	require.True(t, sel.Matches(labels.Set(pod.Labels)), "StatefulSet selector does not select its pods")

	// Container ports are the ones gateway.yaml listens on.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, gatewayDefaultPort(t, gateway, "RUNAGAIN_OTLP_GRPC_ENDPOINT"), ports["otlp-grpc"])
	assert.Equal(t, gatewayDefaultPort(t, gateway, "RUNAGAIN_OTLP_HTTP_ENDPOINT"), ports["otlp-http"])
	assert.Equal(t, gatewayDefaultPort(t, gateway, "RUNAGAIN_HEALTH_ENDPOINT"), ports["health"])
	assert.Equal(t, gatewayDefaultPort(t, gateway, "RUNAGAIN_PROMETHEUS_ENDPOINT"), ports["guard-metrics"])
	assert.Contains(t, string(gateway), "${env:RUNAGAIN_TELEMETRY_PORT:-"+strconv.Itoa(int(ports["telemetry"]))+"}")
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		require.NotNil(t, probe)
		assert.Equal(t, "health", probe.HTTPGet.Port.String())
	}

	// Services select the pods and target named container ports.
	services := 0
	for _, obj := range decodeManifests(t, "deploy/kubernetes/service.yaml") {
		svc := obj.(*corev1.Service)
		services++
		assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)), "Service %s selects no gateway pod", svc.Name)
		for _, p := range svc.Spec.Ports {
			_, ok := ports[p.TargetPort.String()]
			assert.True(t, ok, "Service %s port %s targets %q, not a container port", svc.Name, p.Name, p.TargetPort.String())
		}
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			assert.Equal(t, sts.Spec.ServiceName, svc.Name, "the StatefulSet's serviceName is the headless Service")
		}
	}
	assert.Equal(t, 2, services)

	// Volumes: config from the generated ConfigMap, TLS and tokens from the Secrets.
	cms := map[string]*corev1.ConfigMap{}
	secrets := map[string]*corev1.Secret{}
	for _, rel := range kubernetesManifestFiles(t) {
		for _, obj := range decodeManifests(t, rel) {
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				cms[o.Name] = o
			case *corev1.Secret:
				secrets[o.Name] = o
			}
		}
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	claimed := map[string]bool{}
	for _, vct := range sts.Spec.VolumeClaimTemplates {
		claimed[vct.Name] = true
	}
	for name := range mounts {
		found := claimed[name]
		for _, v := range pod.Spec.Volumes {
			if v.Name != name {
				continue
			}
			found = true
			switch {
			case v.ConfigMap != nil:
				cm, ok := cms[v.ConfigMap.Name]
				if assert.True(t, ok, "volume %s: no ConfigMap %s", name, v.ConfigMap.Name) && mounts[name].SubPath != "" {
					assert.Contains(t, cm.Data, mounts[name].SubPath)
				}
			case v.Secret != nil:
				_, ok := secrets[v.Secret.SecretName]
				assert.True(t, ok, "volume %s: no Secret %s", name, v.Secret.SecretName)
			}
		}
		assert.True(t, found, "volume mount %s has no volume", name)
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			assert.Contains(t, cms, ef.ConfigMapRef.Name)
		}
		if ef.SecretRef != nil {
			assert.Contains(t, secrets, ef.SecretRef.Name)
		}
	}
	env := gatewayEnv(t)
	// The config file the container starts with is the one mounted from the ConfigMap.
	require.Equal(t, []string{"--config=" + mounts["config"].MountPath}, c.Args)
	// TLS and token files are inside the mounted Secrets, with the keys the Secrets hold.
	for envName, vol := range map[string]string{"RUNAGAIN_TLS_CERT_FILE": "tls", "RUNAGAIN_TLS_KEY_FILE": "tls", "RUNAGAIN_TOKEN_FILE": "tokens"} {
		dir, key := filepath.Split(env[envName])
		assert.Equal(t, filepath.Clean(mounts[vol].MountPath), filepath.Clean(dir), envName)
		var secretName string
		for _, v := range pod.Spec.Volumes {
			if v.Name == vol && v.Secret != nil {
				secretName = v.Secret.SecretName
			}
		}
		s := secrets[secretName]
		if assert.NotNil(t, s, "Secret for volume %s", vol) {
			_, inString := s.StringData[key]
			_, inData := s.Data[key]
			assert.True(t, inString || inData, "Secret %s has no key %s (%s)", s.Name, key, envName)
		}
	}
	// The persistent queue is on the claimed volume.
	require.True(t, claimed["data"])
	assert.Equal(t, filepath.Clean(mounts["data"].MountPath), filepath.Clean(env["RUNAGAIN_DATA_DIR"]))
	assert.Contains(t, string(gateway), "${env:RUNAGAIN_DATA_DIR:-/var/lib/runagain}/queue")

	// GOMEMLIMIT is 80% of the memory limit.
	limit := c.Resources.Limits.Memory()
	require.False(t, limit.IsZero(), "the container has a memory limit")
	goMem, err := resource.ParseQuantity(strings.TrimSuffix(env["GOMEMLIMIT"], "B"))
	require.NoError(t, err, "GOMEMLIMIT %q", env["GOMEMLIMIT"])
	assert.InDelta(t, 0.8, float64(goMem.Value())/float64(limit.Value()), 0.01, "GOMEMLIMIT / limits.memory")

	// Non-root, read-only root filesystem (the data volume is the only writable place besides /tmp).
	require.NotNil(t, pod.Spec.SecurityContext.RunAsNonRoot)
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)

	// HPA and PDB point at the StatefulSet and its pods.
	for _, obj := range decodeManifests(t, "deploy/kubernetes/hpa.yaml") {
		hpa := obj.(*autoscalingv2.HorizontalPodAutoscaler)
		assert.Equal(t, "StatefulSet", hpa.Spec.ScaleTargetRef.Kind)
		assert.Equal(t, sts.Name, hpa.Spec.ScaleTargetRef.Name)
		require.NotNil(t, hpa.Spec.MinReplicas)
		assert.LessOrEqual(t, *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	for _, obj := range decodeManifests(t, "deploy/kubernetes/pdb.yaml") {
		pdb := obj.(*policyv1.PodDisruptionBudget)
		s, err := metaSelector(pdb.Spec.Selector.MatchLabels)
		require.NoError(t, err)
		assert.True(t, s.Matches(labels.Set(pod.Labels)), "PDB selects no gateway pod")
	}
	// Everything lives in one namespace, which is created.
	for _, rel := range []string{"statefulset.yaml", "service.yaml", "hpa.yaml", "pdb.yaml", "gateway-configmap.yaml", "env-configmap.yaml", "secret.template.yaml", "serviceaccount.yaml"} {
		for _, obj := range decodeManifests(t, filepath.Join("deploy", "kubernetes", rel)) {
			m, err := metaAccessor(obj)
			require.NoError(t, err)
			assert.Equal(t, "runagain", m, "%s: namespace", rel)
		}
	}
}

func metaSelector(ml map[string]string) (labels.Selector, error) {
	if len(ml) == 0 {
		return nil, fmt.Errorf("empty selector")
	}
	return labels.SelectorFromSet(ml), nil
}

func metaAccessor(obj runtime.Object) (string, error) {
	type namespaced interface{ GetNamespace() string }
	n, ok := obj.(namespaced)
	if !ok {
		return "", fmt.Errorf("%T has no namespace", obj)
	}
	return n.GetNamespace(), nil
}

// TestKustomization: deploy/kubernetes/kustomization.yaml (known fields only) lists every manifest
// of the directory except the Secret template, which holds placeholders and is never applied.
func TestKustomization(t *testing.T) {
	var k struct {
		APIVersion string   `yaml:"apiVersion"`
		Kind       string   `yaml:"kind"`
		Resources  []string `yaml:"resources"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(readFile(t, "deploy/kubernetes/kustomization.yaml"))))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&k))
	assert.Equal(t, "kustomize.config.k8s.io/v1beta1", k.APIVersion)
	assert.Equal(t, "Kustomization", k.Kind)
	var want []string
	for _, rel := range kubernetesManifestFiles(t) {
		dir, base := filepath.Split(rel)
		if filepath.Clean(dir) == filepath.Join("deploy", "kubernetes") && base != "secret.template.yaml" {
			want = append(want, base)
		}
	}
	assert.ElementsMatch(t, want, k.Resources)
	assert.NotContains(t, k.Resources, "secret.template.yaml")
}
