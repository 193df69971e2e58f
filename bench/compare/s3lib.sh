# Sourced by s3.sh and s3rounds.sh: the S3 server and the counting proxy
# on loopback, the tools' environment, and settling the caches before a
# restore. The caller sets B (its folder; B/gw holds the buckets), RES,
# VERSITYGW, PROXY_BIN and an array pids (killed at its exit), and
# defines die.

# start_s3 starts versitygw on B/gw and the proxy in front of it, sets
# PROXY (the address the tools use) and CONTROL (the proxy's counts), and
# exports the credentials, with no other AWS or tool setting in the way.
start_s3() {
	local access=bench-access secret=bench-secret-key-0123456789 port
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	ROOT_ACCESS_KEY=$access ROOT_SECRET_KEY=$secret VGW_REGION=us-east-1 \
		"$VERSITYGW" --port "127.0.0.1:$port" --quiet posix "$B/gw" >"$RES/versitygw.log" 2>&1 &
	pids+=($!)
	rm -f "$B/proxy.addr"
	"$PROXY_BIN" -target "http://127.0.0.1:$port" -addr-file "$B/proxy.addr" 2>"$RES/s3proxy.log" &
	pids+=($!)
	for _ in $(seq 1 600); do
		[ -s "$B/proxy.addr" ] && curl -s -o /dev/null "http://127.0.0.1:$port/" && break
		sleep 0.1
	done
	[ -s "$B/proxy.addr" ] || die "s3proxy did not start (see $RES/s3proxy.log)"
	PROXY=$(sed -n 1p "$B/proxy.addr")
	CONTROL=$(sed -n 2p "$B/proxy.addr")
	counts >/dev/null || die "s3proxy's control does not answer"

	unset RESTIC_PASSWORD RESTIC_PASSWORD_COMMAND RESTIC_REPOSITORY RESTIC_REPOSITORY_FILE RESTIC_CACHE_DIR
	unset NIGHTJAR_PASSWORD NIGHTJAR_PASSWORD_COMMAND NIGHTJAR_REPOSITORY
	unset AWS_PROFILE AWS_SESSION_TOKEN AWS_DEFAULT_REGION
	export AWS_ACCESS_KEY_ID=$access AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1
	export AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_CONFIG_FILE=/dev/null
}

# counts prints the proxy's counts since the last call, as JSON.
counts() { curl -sf "http://$CONTROL/counts?reset=1"; }

# settle: what a restore costs on ext4 depends on what the kernel did
# before it (files just deleted make every file created after them dearer:
# docs/PERFORMANCE.md, "Restore on this machine"), so before each restore
# the dirty pages go out, and as root (unless DROP_CACHES=0) the caches
# are emptied and the buckets read back (the server then serves every
# tool from memory).
settle() {
	sync
	if [ "${DROP_CACHES:-1}" = 1 ] && [ "$(id -u)" = 0 ]; then
		echo 3 >/proc/sys/vm/drop_caches
		find "$B/gw" -type f -exec cat {} + >/dev/null
	fi
}
