package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// resultRow is one line of the throughput table: a test's medians at one
// pipeline depth.
type resultRow struct {
	pipeline     int
	test, server string
	figures
	ratios []ratio
}

// ratio compares a test with another: requests per second, and CPU per
// request.
type ratio struct {
	of  string  // the other test
	x   float64 // this one's rps / the other's
	cpu float64 // this one's CPU per request / the other's; NaN when unknown
}

// column of a text table.
type column struct {
	title string
	left  bool // aligned left; numbers are aligned right
}

// formatTable lays rows out under the columns' titles, two spaces apart,
// without trailing spaces; columns without titles have no title line.
func formatTable(cols []column, rows [][]string) string {
	width := make([]int, len(cols))
	for i, c := range cols {
		width[i] = len([]rune(c.title))
	}
	for _, r := range rows {
		for i, cell := range r {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		var l strings.Builder
		for i, cell := range cells {
			if i > 0 {
				l.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-len([]rune(cell)))
			if cols[i].left {
				l.WriteString(cell + pad)
			} else {
				l.WriteString(pad + cell)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	titles := make([]string, len(cols))
	titled := false
	for i, c := range cols {
		titles[i] = c.title
		titled = titled || c.title != ""
	}
	if titled {
		line(titles)
	}
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

// formatThroughput is the throughput table: each row's figures, the
// server's CPU per request, and its ratios of requests/s and of CPU per
// request to the tests it is compared with. The store's CPU per request and
// the decisions per round trip join it when a row has them (shared mode).
func formatThroughput(rows []resultRow) string {
	shared := false
	for _, r := range rows {
		shared = shared || r.perTrip > 0 || r.storeCPU > 0
	}
	cols := []column{
		{title: "-P"}, {title: "test", left: true}, {title: "server", left: true},
		{title: "requests/s"}, {title: "p50 ms"}, {title: "p99 ms"}, {title: "CPU µs/req"},
	}
	if shared {
		cols = append(cols, column{title: "store µs/req"}, column{title: "decisions/trip"})
	}
	cols = append(cols, column{title: "ratios", left: true}, column{title: "CPU ratios", left: true})
	var cells [][]string
	for _, r := range rows {
		var ratios, cpuRatios []string
		for _, x := range r.ratios {
			ratios = append(ratios, fmt.Sprintf("%.2f× %s", x.x, x.of))
			if !math.IsNaN(x.cpu) && !math.IsInf(x.cpu, 0) {
				cpuRatios = append(cpuRatios, fmt.Sprintf("%.2f× %s", x.cpu, x.of))
			}
		}
		line := []string{
			strconv.Itoa(r.pipeline), r.test, r.server,
			formatCount(r.rps), formatMs(r.p50), formatMs(r.p99), formatCPU(r.cpu),
		}
		if shared {
			store, trip := "", ""
			if r.storeCPU > 0 {
				store = formatCPU(r.storeCPU)
			}
			if r.perTrip > 0 {
				trip = strconv.FormatFloat(r.perTrip, 'f', 1, 64)
			}
			line = append(line, store, trip)
		}
		cells = append(cells, append(line, strings.Join(ratios, ", "), strings.Join(cpuRatios, ", ")))
	}
	return formatTable(cols, cells)
}

// formatCPU writes a CPU time per request in µs, "-" when unknown.
func formatCPU(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// formatCount writes a non-negative figure rounded to an integer, with
// thousands separators: 1234567.8 is "1,234,568".
func formatCount(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatMs writes a latency in milliseconds, "-" when unknown.
func formatMs(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}
