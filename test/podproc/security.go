package podproc

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// defaultCaps are the capabilities containerd and CRI-O grant a
// container that asks for nothing.
var defaultCaps = []string{"CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
	"SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE"}

type securitySettings struct {
	uid, gid   int64
	caps       []string
	readOnly   bool
	noNewPrivs bool
}

// security resolves the container's security context over the Pod's and
// the image's defaults.
func security(pod *corev1.Pod, c corev1.Container, image Image) (securitySettings, error) {
	s := securitySettings{uid: image.UID, gid: image.GID, caps: slices.Clone(defaultCaps)}
	if psc := pod.Spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			s.uid = *psc.RunAsUser
		}
		if psc.RunAsGroup != nil {
			s.gid = *psc.RunAsGroup
		}
		if psc.RunAsNonRoot != nil && *psc.RunAsNonRoot && s.uid == 0 && (c.SecurityContext == nil || c.SecurityContext.RunAsUser == nil) {
			return s, fmt.Errorf("runAsNonRoot is set and the user is root")
		}
	}
	sc := c.SecurityContext
	if sc == nil {
		return s, nil
	}
	if sc.RunAsUser != nil {
		s.uid = *sc.RunAsUser
	}
	if sc.RunAsGroup != nil {
		s.gid = *sc.RunAsGroup
	}
	if sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && s.uid == 0 {
		return s, fmt.Errorf("runAsNonRoot is set and the user is root")
	}
	if sc.Privileged != nil && *sc.Privileged {
		return s, fmt.Errorf("privileged containers are not supported")
	}
	if caps := sc.Capabilities; caps != nil {
		for _, d := range caps.Drop {
			if strings.EqualFold(string(d), "ALL") {
				s.caps = nil
				break
			}
			s.caps = slices.DeleteFunc(s.caps, func(c string) bool { return strings.EqualFold(c, string(d)) })
		}
		for _, a := range caps.Add {
			name := strings.ToUpper(strings.TrimPrefix(string(a), "CAP_"))
			if !slices.Contains(s.caps, name) {
				s.caps = append(s.caps, name)
			}
		}
	}
	s.readOnly = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
	s.noNewPrivs = sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
	return s, nil
}
