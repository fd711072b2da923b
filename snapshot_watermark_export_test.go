package binlogstream

// SnapshotWatermarks makes every flavor read chunks with watermarks, as
// on MySQL: the tests run the algorithm against MariaDB.
func SnapshotWatermarks(on bool) { snapWatermarks = on }

// SnapshotWatermarkNaive makes watermark reads naive, for the negative
// controls: "low-after" takes the low watermark after the SELECT,
// "no-locking" reads with a consistent read instead of a locking one,
// "" is the real algorithm.
func SnapshotWatermarkNaive(mode string) {
	switch mode {
	case "low-after":
		snapWatermarkNaive = naiveLowAfter
	case "no-locking":
		snapWatermarkNaive = naiveNoLocking
	default:
		snapWatermarkNaive = naiveNone
	}
}
