// Package fixedmapper remembers REST mappings. controller-runtime asks its
// RESTMapper whether a kind is namespaced on every cache read of a kind
// cached in some namespaces only (the speaker's ServiceL2Status objects,
// the controller's IPAddressPools),
// and the dynamic mapper builds the answer afresh each time: in a speaker
// deciding 1,000 addresses that was the largest single cost of a round,
// paid twice per address. A process whose kinds are fixed at build time
// can keep the first answer: a kind's scope and resource name do not
// change while it is served.
package fixedmapper

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Mapper answers RESTMapping from memory after the first successful
// answer of the mapper it wraps for the same kind and versions; every
// other question goes to the wrapped mapper. Errors are not remembered, so
// a kind installed later is found when it is.
type Mapper struct {
	meta.RESTMapper

	mu       sync.RWMutex
	mappings map[key]*meta.RESTMapping
}

type key struct {
	kind     schema.GroupKind
	versions string
}

// New wraps m.
func New(m meta.RESTMapper) *Mapper {
	return &Mapper{RESTMapper: m, mappings: map[key]*meta.RESTMapping{}}
}

// RESTMapping returns the mapping the wrapped mapper gave for gk and
// versions, asking it the first time only. The mapping returned is shared:
// callers must not change it (controller-runtime's do not).
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	k := key{kind: gk, versions: strings.Join(versions, ",")}
	m.mu.RLock()
	mapping, ok := m.mappings[k]
	m.mu.RUnlock()
	if ok {
		return mapping, nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.mappings[k] = mapping
	m.mu.Unlock()
	return mapping, nil
}

// Provider is a manager's MapperProvider (ctrl.Options): controller-runtime's
// dynamic mapper, wrapped. Both the controller and the speaker cache kinds
// in one namespace only.
func Provider(c *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(c, hc)
	if err != nil {
		return nil, fmt.Errorf("create REST mapper: %w", err)
	}
	return New(m), nil
}
