// Package mlsecret gives the speakers' memberlist Secret a key when it has
// none, so that a fresh installation gossips encrypted without anyone
// running openssl. It runs in the controller, on the leader only.
//
// The rule, MetalLB's with one addition: a missing Secret is created; a
// Secret whose "secretkey" is missing or empty (the shipped manifests
// carry one without data, so that re-applying them never removes the key)
// gets one; a non-empty key is never touched, so a key a user or MetalLB
// made keeps working. The speakers read the key from the Secret mounted
// as a volume (membership.ReadSecretKey); the kubelet updates the file
// within about a minute, and a speaker waits for it.
//
// The key is 32 base64 characters of 24 random bytes: the speaker uses
// the first 32 bytes of the secret as its AES-256 key (MetalLB's
// derivation), so all of it counts, 192 bits of entropy.
package mlsecret
