//go:build !race

package binlogstream_test

const raceOn = false
