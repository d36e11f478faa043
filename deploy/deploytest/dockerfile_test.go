// SPDX-License-Identifier: Apache-2.0

package deploytest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dockerInstr is one Dockerfile instruction, continuation lines joined.
type dockerInstr struct {
	cmd, args string
}

func parseDockerfile(t *testing.T) []dockerInstr {
	t.Helper()
	var out []dockerInstr
	var cur string
	for _, l := range strings.Split(string(readFile(t, "Dockerfile")), "\n") {
		tl := strings.TrimSpace(l)
		if cur == "" && (tl == "" || strings.HasPrefix(tl, "#")) {
			continue
		}
		if strings.HasSuffix(tl, "\\") {
			cur += strings.TrimSuffix(tl, "\\") + " "
			continue
		}
		cur += tl
		cmd, args, _ := strings.Cut(cur, " ")
		out = append(out, dockerInstr{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// TestDockerfile: the image cannot be built on these machines (no container runtime), so its
// recipe is checked: multi-stage, a static (CGO_ENABLED=0) build through the same ocb manifest as
// `make build`, a non-root final user, the default config baked in where CMD points, and every
// file copied from the context present and not excluded by .dockerignore.
func TestDockerfile(t *testing.T) {
	instrs := parseDockerfile(t)
	root := repoRoot(t)
	ignore := map[string]bool{}
	for _, l := range strings.Split(string(readFile(t, ".dockerignore")), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ignore[strings.TrimPrefix(l, "/")] = true
		}
	}

	var froms []string
	var finalUser, cmd, entry string
	copied := map[string]bool{} // destinations in the final stage
	all := ""
	for _, in := range instrs {
		all += in.cmd + " " + in.args + "\n"
		switch in.cmd {
		case "FROM":
			froms = append(froms, in.args)
			finalUser, copied = "", map[string]bool{}
		case "USER":
			finalUser = in.args
		case "CMD":
			cmd = in.args
		case "ENTRYPOINT":
			entry = in.args
		case "COPY":
			fields := strings.Fields(in.args)
			var srcs []string
			fromStage := false
			for _, f := range fields {
				if strings.HasPrefix(f, "--") {
					fromStage = fromStage || strings.HasPrefix(f, "--from=")
					continue
				}
				srcs = append(srcs, f)
			}
			require.GreaterOrEqual(t, len(srcs), 2, "COPY %s", in.args)
			dst := srcs[len(srcs)-1]
			copied[dst] = true
			if fromStage {
				continue
			}
			for _, s := range srcs[:len(srcs)-1] {
				if s == "." {
					continue
				}
				_, err := os.Stat(filepath.Join(root, s))
				assert.NoError(t, err, "COPY source %s", s)
				top, _, _ := strings.Cut(s, "/")
				assert.False(t, ignore[s] || ignore[top], "COPY source %s is excluded by .dockerignore", s)
			}
		}
	}
	require.GreaterOrEqual(t, len(froms), 2, "multi-stage build")
	assert.Contains(t, froms[0], " AS build")
	assert.Contains(t, all, "CGO_ENABLED=0", "static binaries")
	assert.Contains(t, all, "go tool builder --config builder-config.yaml", "the same ocb manifest as make build")
	assert.Contains(t, string(readFile(t, "Makefile")), "tool builder --config builder-config.yaml")
	require.NotEmpty(t, finalUser, "the final stage sets USER")
	uid, _, _ := strings.Cut(finalUser, ":")
	assert.NotContains(t, []string{"0", "root"}, uid, "non-root user")
	assert.Contains(t, entry, "otelcol-runagain")
	assert.True(t, copied["/etc/runagain/config.yaml"], "default config baked in")
	assert.Contains(t, cmd, "/etc/runagain/config.yaml")
	for _, must := range []string{"_build", "bin", "data", ".git"} {
		assert.True(t, ignore[must], ".dockerignore excludes %s", must)
	}
	// The Kubernetes pods run as the image's user.
	sts := gatewayStatefulSet(t)
	assert.Equal(t, uid, strconv.FormatInt(*sts.Spec.Template.Spec.SecurityContext.RunAsUser, 10))
	assert.Equal(t, "runagain/otelcol-runagain:0.1.0", gatewayContainer(t).Image)
}
