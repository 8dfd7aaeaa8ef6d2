#!/usr/bin/env bash
# libvirtd.sh - a private libvirtd (Debian 12's 9.0, monolithic) in front of our QEMU.
#
# Usage: scripts/libvirtd.sh start DIR    start it; print its URI (qemu+unix, socket in DIR)
#        scripts/libvirtd.sh stop DIR     destroy its domains, stop it, kill any QEMU left
#        scripts/libvirtd.sh uri DIR      print the URI
#
# Root libvirtd fixes its state paths (/etc/libvirt, /run/libvirt, /var/{lib,cache,log}/
# libvirt) and moves every QEMU it starts into cgroups of its own.  This one runs in a
# private mount namespace where those paths are bind mounts of DIR's subdirectories and
# /sys/fs/cgroup is unmounted (libvirt then sees no cgroup file system and makes none):
# nothing of the machine's own libvirt configuration is read or written, and the QEMU
# processes stay in the caller's cgroups.  Only the qemu driver is loaded (no network,
# storage, nodedev drivers: no dnsmasq, iptables, udev).  libvirt's qemu driver wants a
# user libvirt-qemu, which only libvirt-daemon-system's postinst creates: the namespace
# sees a copy of /etc/passwd and /etc/group with it; the machine's files are not changed.
# QEMU runs as root, without virtlogd, lock manager, security driver or seccomp.
# Nothing is left running after 'stop': libvirt daemonizes QEMU, so stop destroys every
# domain and then kills, by the pid files libvirt keeps, any QEMU still there.
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

cmd=${1:-} dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || {
	echo "usage: $0 start|stop|uri DIR" >&2
	exit 2
}
mkdir -p "$dir"
dir=$(realpath "$dir")
uri="qemu+unix:///system?socket=$dir/sock/libvirt-sock"
pidfile=$dir/libvirtd.pid
virsh() { command virsh -q -c "$uri" "$@"; }

running() {
	[ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

start() {
	if running; then
		echo "$uri"
		return
	fi
	[ "$(id -u)" -eq 0 ] || {
		echo "libvirtd.sh: needs root (a root libvirtd in a private mount namespace)" >&2
		exit 1
	}
	[ -x /usr/sbin/libvirtd ] || {
		echo "libvirtd.sh: no /usr/sbin/libvirtd: run 'make deps'" >&2
		exit 1
	}
	[ ${#dir} -lt 80 ] || {
		echo "libvirtd.sh: $dir is too long for a unix socket path" >&2
		exit 1
	}
	rm -rf "$dir"/{etc,run,lib,cache,sock,drivers}
	mkdir -p "$dir"/{etc,run,lib,cache,log,sock,drivers}
	ln -s /usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so \
		"$dir/drivers/"
	cp /etc/passwd "$dir/passwd"
	cp /etc/group "$dir/group"
	getent passwd libvirt-qemu >/dev/null ||
		echo "libvirt-qemu:x:64055:64055:Libvirt Qemu:/var/lib/libvirt:/usr/sbin/nologin" \
			>>"$dir/passwd"
	getent group libvirt-qemu >/dev/null || echo "libvirt-qemu:x:64055:" >>"$dir/group"
	cat >"$dir/etc/libvirtd.conf" <<EOF
unix_sock_dir = "$dir/sock"
unix_sock_rw_perms = "0700"
unix_sock_ro_perms = "0700"
auth_unix_rw = "none"
auth_unix_ro = "none"
max_client_requests = 64
max_workers = 40
log_outputs = "3:file:$dir/log/libvirtd.log"
EOF
	cat >"$dir/etc/qemu.conf" <<EOF
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
stdio_handler = "file"
seccomp_sandbox = 0
save_image_format = "raw"
EOF
	mkdir -p /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt
	# The daemon's own pid is the one written: unshare and sh exec into it.
	unshare --mount --propagation private -- sh -c "
		umount -R -l /sys/fs/cgroup 2>/dev/null || true
		mount --bind '$dir/passwd' /etc/passwd
		mount --bind '$dir/group' /etc/group
		mount --bind '$dir/etc' /etc/libvirt
		mount --bind '$dir/run' /run/libvirt
		mount --bind '$dir/lib' /var/lib/libvirt
		mount --bind '$dir/cache' /var/cache/libvirt
		mount --bind '$dir/log' /var/log/libvirt
		exec env LIBVIRT_DRIVER_DIR='$dir/drivers' /usr/sbin/libvirtd \
			--config '$dir/etc/libvirtd.conf' --pid-file '$dir/libvirtd.pid'
	" </dev/null >"$dir/log/libvirtd.stderr" 2>&1 &
	local pid=$! i
	for i in $(seq 1 200); do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "libvirtd.sh: libvirtd exited at start-up:" >&2
			tail -n 20 "$dir/log/libvirtd.stderr" "$dir/log/libvirtd.log" >&2 || true
			exit 1
		fi
		if [ -S "$dir/sock/libvirt-sock" ] && virsh list >/dev/null 2>&1; then
			echo "$pid" >"$pidfile"
			echo "$uri"
			return
		fi
		sleep 0.1
	done
	echo "libvirtd.sh: libvirtd did not answer on $uri in 20 s" >&2
	kill "$pid" 2>/dev/null || true
	exit 1
}

stop() {
	local d pid i
	if running; then
		for d in $(virsh list --all --name 2>/dev/null); do
			virsh destroy "$d" >/dev/null 2>&1 || true
			virsh undefine --managed-save --snapshots-metadata "$d" >/dev/null 2>&1 || true
		done
		pid=$(cat "$pidfile")
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
	# Any QEMU libvirt started and did not end (its pid files survive the daemon)
	for f in "$dir"/run/qemu/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null || true)
		[ -n "$pid" ] && [ -d "/proc/$pid" ] &&
			grep -q qemu "/proc/$pid/comm" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
		rm -f "$f"
	done
}

case $cmd in
start) start ;;
stop) stop ;;
uri) echo "$uri" ;;
*)
	echo "usage: $0 start|stop|uri DIR" >&2
	exit 2
	;;
esac
