// Command benchtable passes `go test -bench` output through and then
// prints its results as one Markdown table: a row per benchmark (several
// runs of one benchmark are averaged, with their range), the metrics the
// benchmark reports in its cells. `make bench` pipes into it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// result gathers the runs of one benchmark.
type result struct {
	name    string
	units   []string             // metric units in first-seen order
	samples map[string][]float64 // unit -> value of each run
}

func main() {
	results, err := parse(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if len(results) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: no benchmark results in the input")
		os.Exit(1)
	}
	fmt.Println()
	writeTable(os.Stdout, results)
}

// parse copies in to echo and collects the benchmark lines:
// "BenchmarkName-2  N  v1 unit1  v2 unit2 ...".
func parse(in io.Reader, echo io.Writer) ([]*result, error) {
	var order []*result
	byName := map[string]*result{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(echo, line)
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := trimProcs(f[0])
		r := byName[name]
		if r == nil {
			r = &result{name: name, samples: map[string][]float64{}}
			byName[name] = r
			order = append(order, r)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			u := f[i+1]
			if _, ok := r.samples[u]; !ok {
				r.units = append(r.units, u)
			}
			r.samples[u] = append(r.samples[u], v)
		}
	}
	return order, sc.Err()
}

// trimProcs drops the -GOMAXPROCS suffix go test adds.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

func writeTable(w io.Writer, results []*result) {
	fmt.Fprintln(w, "| benchmark | runs | results (mean, [min-max] over runs) |")
	fmt.Fprintln(w, "| --- | --- | --- |")
	for _, r := range results {
		var cells []string
		runs := 0
		for _, u := range r.units {
			if u == "ns/op" || u == "B/op" {
				continue // per iteration of the harness, not per event
			}
			vs := r.samples[u]
			runs = max(runs, len(vs))
			cells = append(cells, summary(vs)+" "+u)
		}
		fmt.Fprintf(w, "| %s | %d | %s |\n", r.name, runs, strings.Join(cells, ", "))
	}
}

// summary is the mean of vs, with the range when the runs differ.
func summary(vs []float64) string {
	lo, hi, sum := vs[0], vs[0], 0.0
	for _, v := range vs {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	s := format(sum / float64(len(vs)))
	if len(vs) > 1 && lo != hi {
		s += " [" + format(lo) + "-" + format(hi) + "]"
	}
	return s
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}
