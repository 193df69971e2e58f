// Package cpuprofile is the -cpuprofile flag of the benchmark programs
// (bench/bigrepo, bench/usedblobs): one place that starts and stops the
// profile.
package cpuprofile
