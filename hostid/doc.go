// Package hostid tells this boot and this PID namespace apart from others,
// for the places that judge whether a process named in a record (a lock, a
// run's runner, a temporary file's writer) is this host's and can still be
// alive: the ID of the boot (Linux's /proc/sys/kernel/random/boot_id,
// macOS's kern.bootsessionuuid; empty elsewhere) and the PID namespace
// (Linux's /proc/self/ns/pid link; empty elsewhere, where a host's PIDs
// are one set).
package hostid
