//go:build !race

package rows_test

const raceOn = false
