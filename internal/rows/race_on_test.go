//go:build race

package rows_test

// raceOn: the race detector slows the generated-input tests tenfold; they
// run fewer inputs under it (the fuzzers and the plain runs cover more).
const raceOn = true
