// Package routes keeps what this node advertises over BGP, per session and
// prefix, as the sum of its sources' contributions, and says what must be
// sent to bring each session in line.
//
// A source (a Service) contributes entries: "advertise this prefix to this
// session with these attributes". Several sources, and several addresses
// of one source, may contribute to one route (aggregation, shared
// addresses), so each route counts its contributions by attributes; it is
// advertised while any remain, with their communities merged. Replacing
// one source's entries touches only the routes those entries name, so the
// cost of a change is the size of the change, not of the table (invariant
// 10 in docs/architecture.md). What was sent is kept apart from what is wanted: a
// send that fails leaves the route pending, to be sent again.
package routes
