// Package architecture holds the test that keeps ARCHITECTURE.md's
// package table true: it has no code of its own.
package architecture
