// Package l2decide decides who answers ARP/NDP for one address: from the
// address's pool, the Services that show it, the live members and their
// Nodes' facts, Decide elects the owner (internal/speaker/election orders
// the candidates), the Services it answers for and the interfaces it may
// answer on, or says why nobody answers. Every speaker decides alone and
// reaches the same owner from the same inputs. It is pure; the speaker's
// round gathers the inputs and applies the decision (Announcer,
// ServiceL2Status objects).
package l2decide
