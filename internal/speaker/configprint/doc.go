// Package configprint tells whether the speaker's configuration changed
// without building it: Objects fingerprints the configuration objects of
// a snapshot by what the configuration reads of them (kind, name, UID,
// generation, labels), so a status write or a resync yields the same
// fingerprint and the speaker skips the rebuild and the full round that
// follows. Spec changes move the generation; labels matter because pool
// selectors read them.
package configprint
