// Package runnerid names a scheduler process so that another process can
// tell whether it is still alive: its host, PID, boot ID, PID namespace and
// start time. A runner on another host, another boot or in another PID
// namespace (a container that shares the host name) cannot be judged from
// here: only its lease in the state database says whether it lives. It
// never decides a reclaim itself; the pass does, with its answer.
package runnerid
