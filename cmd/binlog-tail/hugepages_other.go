//go:build !linux

package main

// adviseHugeHeapAtStart is Linux's advice for transparent huge pages on
// the heap; elsewhere the heap stays as Go maps it.
func adviseHugeHeapAtStart() {}
