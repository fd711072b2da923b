package clikit

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// ErrVersion is what Parse returns once it printed --version. It matches
// flag.ErrHelp, so a command that exits 0 on --help exits 0 on it too.
var ErrVersion = fmt.Errorf("%w (--version)", flag.ErrHelp)

// Help is what a command's --help prints: Synopsis and Text before the
// flags, After below them.
type Help struct {
	Synopsis, Text, After string
}

// Parse parses args with fs, adding --version. It prints nothing for a
// bad flag: it returns the flag's error for UsageError to report. --help
// (-h) prints the help to fs's output and returns flag.ErrHelp;
// --version prints Version and returns ErrVersion.
func Parse(fs *flag.FlagSet, args []string, h Help) error {
	out := fs.Output()
	version := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = func() { PrintHelp(fs, h) }
	switch {
	case errors.Is(err, flag.ErrHelp):
		PrintHelp(fs, h)
		return err
	case err != nil:
		return err
	case *version:
		fmt.Fprintln(out, Version(fs.Name()))
		return ErrVersion
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// PrintHelp prints h and fs's flags to fs's output, a blank line after
// the synopsis.
func PrintHelp(fs *flag.FlagSet, h Help) {
	if h.Synopsis != "" {
		fmt.Fprint(fs.Output(), h.Synopsis, "\n")
	}
	fmt.Fprint(fs.Output(), h.Text)
	fs.PrintDefaults()
	fmt.Fprint(fs.Output(), h.After)
}

// UsageError reports a bad command line on stderr, the cause on one line
// and where the flags are described on the next, and returns 2, the exit
// status for it.
func UsageError(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for the flags.\n", name, strings.Join(strings.Fields(err.Error()), " "), name)
	return 2
}

// Missing returns an error naming every flag of names (without dashes)
// that the command line did not set, or nil.
func Missing(fs *flag.FlagSet, names ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var missing []string
	for _, n := range names {
		if !set[n] {
			missing = append(missing, "--"+n)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("missing required flag %s", missing[0])
	}
	return fmt.Errorf("missing required flags %s and %s", strings.Join(missing[:len(missing)-1], ", "), missing[len(missing)-1])
}

// Version is "NAME VERSION" with the commit and its time when the binary
// was built from a repository, from the build information Go embeds.
func Version(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return name + " (no build information)"
	}
	return versionOf(name, bi)
}

func versionOf(name string, bi *debug.BuildInfo) string {
	v := name + " " + bi.Main.Version
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		v += " commit " + rev
		if modified {
			v += " (modified)"
		}
		if at != "" {
			v += " " + at
		}
	}
	return v + " " + bi.GoVersion
}

// CheckPlaceholders returns the flags of fs whose help shows a type
// ("value", "string", "int", ...) where a name (`FILE`, `DSN`) belongs.
func CheckPlaceholders(fs *flag.FlagSet) []string {
	var bad []string
	fs.VisitAll(func(f *flag.Flag) {
		name, _ := flag.UnquoteUsage(f)
		switch name {
		case "value", "string", "int", "uint", "float", "int64", "uint64":
			bad = append(bad, "--"+f.Name+" "+name)
		}
	})
	return bad
}
