package speaker

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/steadylb/steadylb/api/v1beta1"
	"github.com/steadylb/steadylb/api/v1beta2"
	"github.com/steadylb/steadylb/test/fixture"
	"github.com/steadylb/steadylb/test/testenv"
)

// password is the TCP MD5 password the node's session to peer has.
func (f *fakeRouter) password(session string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sessions[session]
	return s.Password, ok
}

// TestBGPPasswordSecretByName: the speaker reads a peer's password from
// the Secret it names (one GET, no list or watch of Secrets), and reads it
// again when the BGPPeer changes, so a rotated password reaches the
// session as soon as the peer is touched. A Secret of the wrong type is
// refused with the peer and field named.
func TestBGPPasswordSecretByName(t *testing.T) {
	l := newBGPLab(t, "a")
	pool := l.bgpPool("pw", "198.51.100.160/28")
	secretName := l.id + "-md5"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: testenv.Namespace},
		Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{corev1.BasicAuthPasswordKey: []byte("first")}}
	create(t, secret)
	peer := l.bgpPeer("pw", 64500, "203.0.113.1", nil, func(s *v1beta2.BGPPeerSpec) { s.PasswordSecret.Name = secretName })
	l.bgpAdvertisement("pw", v1beta1.BGPAdvertisementSpec{IPAddressPools: []string{pool}})
	r := l.routers["a"]
	waitPassword := func(want string) {
		t.Helper()
		fixture.WaitFor(t, fmt.Sprintf("session %s with password %q", peer, want), func() bool {
			got, ok := r.password(peer)
			return ok && got == want
		})
	}
	waitPassword("first")

	edit(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: testenv.Namespace}}, func(s *corev1.Secret) {
		s.Data[corev1.BasicAuthPasswordKey] = []byte("second")
	})
	edit(t, &v1beta2.BGPPeer{ObjectMeta: metav1.ObjectMeta{Name: peer, Namespace: testenv.Namespace}}, func(p *v1beta2.BGPPeer) {
		p.Labels = map[string]string{"steadylb.io/password-rotated": "1"}
	})
	waitPassword("second")

	wrong := l.id + "-opaque"
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: wrong, Namespace: testenv.Namespace},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{corev1.BasicAuthPasswordKey: []byte("x")}})
	bad := l.bgpPeer("opaque", 64500, "203.0.113.2", nil, func(s *v1beta2.BGPPeerSpec) { s.PasswordSecret.Name = wrong })
	want := fmt.Sprintf(`BGPPeer %q: spec.passwordSecret.name: Secret %q is of type "Opaque", want "kubernetes.io/basic-auth"`, bad, wrong)
	fixture.WaitFor(t, "the ConfigurationState to name the peer with an Opaque Secret", func() bool {
		st, ok := l.configurationState("a")
		return ok && st.Status.Result == v1beta1.ConfigurationInvalid && strings.Contains(st.Status.ErrorSummary, want)
	})
	if got, _ := r.password(peer); got != "second" {
		t.Errorf("the other peer's password became %q", got)
	}
}
