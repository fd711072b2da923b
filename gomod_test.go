package binlogstream_test

import (
	"go/version"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// go.mod's go line is the floor, not the toolchain at hand: the highest
// go line among the modules it requires (a consumer's go mod tidy raises
// its own go line to ours). The code itself needs go1.25
// (sync.WaitGroup.Go) and range-over-func, below what the dependencies ask.
func TestGoDirectiveIsTheFloor(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Main}} {{.Path}} {{.GoVersion}}", "all").Output()
	require.NoError(t, err)
	var ours, floor, by string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue // a module without a go line
		}
		if f[0] == "true" {
			ours = f[2]
			continue
		}
		if version.Compare("go"+f[2], "go"+floor) > 0 || floor == "" {
			floor, by = f[2], f[1]
		}
	}
	require.NotEmpty(t, ours)
	require.Equal(t, floor, ours, "go.mod says go %s; the highest a dependency needs is %s (%s)", ours, floor, by)
}
