#!/usr/bin/env bash
# check-help.sh - every program of the tree answers -h and --help, and does nothing else.
#
# Usage: scripts/check-help.sh TAP
#
#   Runs each executable of scripts/, snapshot-scenarios/ and .ci/ with --help and with
#   -h, from an empty directory, with HOME, XDG_CACHE_HOME and TMPDIR pointed at empty
#   ones.  A program passes when both exit 0, print something on standard output, and
#   no file was written: not in those directories, not in the tree, not in build/ to
#   four levels (run it when nothing else builds there).  One TAP line per program; a program
#   whose source handles neither option is not run, and fails.  Last, README.md's commands:
#   every `make TARGET` it names must be a target that 'make help' lists, and every
#   VARIABLE= it gives a make command a variable that 'make help' names;
#   docs/testing.md's scenario table must be what the scenario modules' docstrings make
#   (snapshot-scenarios/run.py --table); and make audit, dry-run, must reach audit.py
#   without building a kernel of ours (an operator's kernel needs only QEMU and the guest
#   programs).
case "${1:-}" in -h | --help)
	awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 TAP" >&2; exit 2; }
tap=$1
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$(dirname "$tap")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mapfile -t progs < <(cd "$top" && find scripts snapshot-scenarios .ci -maxdepth 1 -type f \
	-perm -u+x | sort)
# One line per program, then the README's make targets, the scenario table, make audit.
echo "1..$((${#progs[@]} + 3))" >"$tap.new"
n=0 failed=0
for p in "${progs[@]}"; do
	n=$((n + 1))
	why=
	# A program that does not handle the option could do anything with it: not run.
	grep -qE -- '--help|argparse' "$top/$p" || why="no -h/--help handling (not run)"
	for opt in --help -h; do
		[ -z "$why" ] || break
		rm -rf "$tmp/run" && mkdir -p "$tmp/run/cwd" "$tmp/run/home" "$tmp/run/cache" \
			"$tmp/run/tmp"
		touch "$tmp/stamp"
		sleep 0.01
		rc=0
		(cd "$tmp/run/cwd" && HOME=$tmp/run/home XDG_CACHE_HOME=$tmp/run/cache \
			TMPDIR=$tmp/run/tmp timeout 60 "$top/$p" "$opt" \
			>"$tmp/out" 2>"$tmp/err" </dev/null) || rc=$?
		written=$( { find "$tmp/run" -mindepth 2 || true
			find "$top" \( -path "$top/.git" -o -path "$top/build" \) -prune -o \
				-newer "$tmp/stamp" -print || true
			# build/ to three levels: a file made deeper changes its folder's time
			find "$top/build" -maxdepth 3 -newer "$tmp/stamp" -print 2>/dev/null || true
			} | sed -n 1,3p)
		if [ "$rc" -ne 0 ]; then
			why="$opt exited $rc: $(head -c 200 "$tmp/err" | tr '\n' ' ')"
		elif [ ! -s "$tmp/out" ]; then
			why="$opt printed nothing on standard output"
		elif [ -n "$written" ]; then
			why="$opt wrote $(echo "$written" | tr '\n' ' ')"
		fi
		[ -z "$why" ] || break
	done
	if [ -z "$why" ]; then
		echo "ok $n - $p --help: $(grep -m1 . "$tmp/out" | cut -c1-90)" >>"$tap.new"
	else
		echo "not ok $n - $p: $why" >>"$tap.new"
		failed=$((failed + 1))
	fi
done
# The README's commands exist: every `make TARGET` it gives is a target 'make help' lists,
# or check-SUITE for a suite 'make suites' names.
n=$((n + 1))
help=$(make -s -C "$top" help)
listed=$(echo "$help" | awk '{ print $1 }')
suites=$(make -s -C "$top" suites)
unknown=
for t in $(grep -oE '`make [a-z][a-z0-9-]*' "$top/README.md" | awk '{ print $2 }' | sort -u); do
	echo "$listed" | grep -qxF "$t" && continue
	case " $suites " in *" ${t#check-} "*) [ "${t#check-}" != "$t" ] && continue ;; esac
	unknown+=" $t"
done
for v in $(grep -oE '`make [^`]*`' "$top/README.md" | grep -oE '\b[A-Z][A-Z0-9_]+=' | sort -u); do
	echo "$help" | grep -qF -- "$v" || unknown+=" $v"
done
if [ -z "$unknown" ]; then
	echo "ok $n - README.md: every make target and variable it names is in make help" \
		>>"$tap.new"
else
	echo "not ok $n - README.md names targets or variables make help does not list:$unknown" \
		>>"$tap.new"
	failed=$((failed + 1))
fi
# The scenario table of docs/testing.md is the modules' docstrings (run.py --table).
n=$((n + 1))
"$top/snapshot-scenarios/run.py" --table >"$tmp/table"
first=$(head -1 "$tmp/table") last=$(tail -1 "$tmp/table")
awk -v a="$first" -v b="$last" '$0 == a { on = 1 } on { print } $0 == b { on = 0 }' \
	"$top/docs/testing.md" >"$tmp/table.docs"
if cmp -s "$tmp/table" "$tmp/table.docs"; then
	echo "ok $n - docs/testing.md: the scenario table is the scenarios' docstrings" >>"$tap.new"
else
	echo "not ok $n - docs/testing.md's scenario table differs from snapshot-scenarios/run.py" \
		"--table: $(diff "$tmp/table.docs" "$tmp/table" | grep -c '^[<>]') lines" >>"$tap.new"
	failed=$((failed + 1))
fi
# make audit builds no kernel of ours: its dry run reaches audit.py and never build-kernel.sh
n=$((n + 1))
dry=$(make -n -s -C "$top" audit KERNEL="$top/README.md" 2>&1 || true)
if echo "$dry" | grep -q 'scripts/audit.py' && ! echo "$dry" | grep -q 'build-kernel.sh'; then
	echo "ok $n - make audit KERNEL=...: QEMU and the guest programs only, no kernel of ours" \
		>>"$tap.new"
else
	echo "not ok $n - make audit KERNEL=...: $(echo "$dry" | grep -c 'build-kernel.sh')" \
		"kernel builds, audit.py $(echo "$dry" | grep -q 'scripts/audit.py' && echo reached ||
		echo 'not reached') in its dry run" >>"$tap.new"
	failed=$((failed + 1))
fi
mv "$tap.new" "$tap"
cat "$tap"
[ "$failed" -eq 0 ]
