// Package bgpdecide decides what this node advertises over BGP: Model is
// the configuration as this node sees it (its sessions, and per pool the
// advertisements that select it), and Decide turns one Service into its
// routes, one entry per (session, prefix). There is no election: every
// eligible node advertises. It is pure; the speaker feeds the entries to
// internal/speaker/routes and sends what changed to the Router.
package bgpdecide
