// Package session provides the different types of sessions for en/decrypting
// of messages
package session
