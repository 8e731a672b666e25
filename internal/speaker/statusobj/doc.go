// Package statusobj is what the speaker's two kinds of per-Service status
// objects, ServiceL2Status (internal/speaker/l2status) and
// ServiceBGPStatus (internal/speaker/bgpstatus), have in common: they are
// labelled with their node and Service, a node holds at most one per
// Service, adopts those an earlier run left, deletes exactly the object
// it means (by UID), and writes them from a background queue.
package statusobj
