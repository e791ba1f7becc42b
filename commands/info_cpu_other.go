//go:build !unix

package commands

// cpuUsage reports zero where getrusage is not available.
func cpuUsage() (self, children cpuTime) { return cpuTime{}, cpuTime{} }
