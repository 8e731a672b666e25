package render

import (
	"path/filepath"
)

// ReleaseName is the release name the suites install the chart under.
const ReleaseName = "steadylb"

// Helm runs one Helm binary on the chart of one checkout, with its own
// configuration and cache directories, so that nothing on the machine (a
// user's repositories, plugins or registry logins) changes what it does.
type Helm struct {
	Binary string
	// Chart is the chart's directory.
	Chart string
	env   []string
}

// NewHelm returns a Helm for the chart of the checkout at root, keeping
// its state under dir.
func NewHelm(binary, root, dir string) *Helm {
	return &Helm{
		Binary: binary,
		Chart:  filepath.Join(root, "charts", "steadylb"),
		env: []string{
			"HELM_CONFIG_HOME=" + filepath.Join(dir, "config"),
			"HELM_CACHE_HOME=" + filepath.Join(dir, "cache"),
			"HELM_DATA_HOME=" + filepath.Join(dir, "data"),
		},
	}
}

// Run runs helm with args and returns its stdout; the error carries
// stderr.
func (h *Helm) Run(args ...string) (string, error) {
	return Run(h.env, h.Binary, args...)
}

// Template renders the chart as release ReleaseName in namespace, with
// more helm arguments (--set, -f, --show-only ...).
func (h *Helm) Template(namespace string, args ...string) (Objects, error) {
	out, err := h.Run(append([]string{"template", ReleaseName, h.Chart, "--namespace", namespace}, args...)...)
	if err != nil {
		return Objects{}, err
	}
	return Decode([]byte(out))
}
