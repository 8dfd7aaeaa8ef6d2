#!/usr/bin/env bash
# check-patches.sh - run the base tree's own checkpatch.pl over a row's patch series.
#
# Usage: scripts/check-patches.sh linux|qemu SRCDIR PATCHDIR TAP
#
#   One TAP line per patch of PATCHDIR/series, checked by SRCDIR/scripts/checkpatch.pl
#   (the checker of the tree the series applies to):
#   - linux: 'checkpatch.pl --strict' for our patches; a backport of upstream code (its
#     message carries "commit <id> upstream.", or a "[ backport" note that names the
#     upstream commits it takes) is held to plain checkpatch, since --strict's CHECKs on
#     upstream code are upstream's to change (and so is a repeated word in its message:
#     REPEATED_WORD is not checked there).  Any ERROR, WARNING
#     or CHECK fails the patch.  Two checks are replaced, not skipped: the tree is
#     Debian's tarball without upstream history, so a commit id cannot be looked up
#     (UNKNOWN_COMMIT_ID; the id's form is still checked); and instead of "does
#     MAINTAINERS need updating?" for every added file (FILE_PATH_CHANGES), each file a
#     patch adds must have a maintainer in the tree's MAINTAINERS at the end of the
#     series (get_maintainer.pl); a backport's added files are held to upstream's
#     MAINTAINERS, so one that upstream leaves without a maintainer is only named.
#   - qemu: QEMU's checkpatch.pl, which fails a patch on an ERROR, as QEMU's CI does;
#     its warnings are printed as TAP comments.
#   Every patch needs a Signed-off-by: line (both checkers also say so).
#   Exit status 0 when every patch passed.
#
#   A passing result is cached under ~/.cache/reseed-lab/checkpatch (XDG_CACHE_HOME),
#   keyed by the patch files, the tree the series makes (its checkpatch.pl and
#   MAINTAINERS among it) and this script: a fresh clone of an unchanged series reports
#   the cached lines, marked so.  RESEED_BUILD_CACHE= (empty) turns it off.
set -euo pipefail
# Only a whole result is cached: its plan, and as many results as it plans (a results
# folder removed while this ran leaves a file with the later lines only).
complete() {
	local plan
	plan=$(sed -n '1s/^1\.\.\([0-9][0-9]*\)$/\1/p' "$1")
	[ -n "$plan" ] && [ "$(grep -cE '^(ok|not ok) ' "$1")" -eq "$plan" ]
}

usage() { echo "usage: $0 linux|qemu SRCDIR PATCHDIR TAP" >&2; exit "${1:-2}"; }
case "${1:-}" in -h|--help) usage 0 2>&1 ;; esac
[ $# -eq 4 ] || usage
what=$1 src=$(realpath "$2") patches=$(realpath "$3") tap=$4
case "$what" in linux|qemu) ;; *) usage ;; esac
[ -x "$src/scripts/checkpatch.pl" ] || [ -f "$src/scripts/checkpatch.pl" ] ||
	{ echo "check-patches: $src/scripts/checkpatch.pl missing (make sources)" >&2; exit 1; }

# checkpatch runs scripts/spdxcheck.py with 'python3', which needs Debian's python3-ply:
# Debian's interpreter first on PATH, whatever else is installed.
export PATH=/usr/bin:$PATH
mapfile -t series < <(grep -vE '^[[:space:]]*(#|$)' "$patches/series")
mkdir -p "$(dirname "$tap")"

cache=${RESEED_BUILD_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/reseed-lab/kernel}
[ -z "$cache" ] || cache=$(dirname "$cache")/checkpatch
key=$({ echo "$what"; git -C "$src" rev-parse 'HEAD^{tree}'
	for p in "${series[@]}"; do sha256sum <"$patches/$p"; done
	sha256sum <"$0"; perl -e 'print "$^V\n"'; } | sha256sum | cut -c1-32)
if [ -n "$cache" ] && [ -f "$cache/$key.tap" ]; then
	sed 's/^\(ok [0-9]* - .*\)$/\1 [cached: checked here before]/' "$cache/$key.tap" >"$tap"
	cat "$tap"
	exit 0
fi
out=$(mktemp) comments=$(mktemp)
trap 'rm -f "$out" "$comments"' EXIT
echo "1..${#series[@]}" >"$tap.new"
n=0 failed=0
for p in "${series[@]}"; do
	n=$((n + 1))
	f=$patches/$p
	msg=$(sed '/^---$/q' "$f")
	opts=(--no-summary --terse)
	kind= backport=
	: >"$comments"
	if [ "$what" = linux ]; then
		opts+=(--ignore UNKNOWN_COMMIT_ID,FILE_PATH_CHANGES)
		if grep -qE '^(commit [0-9a-f]{12,40} upstream\.|\[ backport)' <<<"$msg"; then
			kind=" (backport: checkpatch)"
			backport=1
			# upstream's own words (e.g. "much much simpler" in 562f59fe3291)
			opts+=(--ignore REPEATED_WORD)
		else
			opts+=(--strict)
			kind=" (checkpatch --strict)"
		fi
	fi
	(cd "$src" && perl scripts/checkpatch.pl "${opts[@]}" "$f") >"$out" 2>&1 || true
	if [ "$what" = linux ]; then
		bad=$(grep -cE ': (ERROR|WARNING|CHECK):' "$out" || true)
		# The files it adds, and who would review them.
		while read -r added; do
			[ -e "$src/$added" ] || continue
			(cd "$src" && perl scripts/get_maintainer.pl --no-git --no-git-fallback \
				--no-rolestats -f "$added" 2>/dev/null) | grep -q '<' && continue
			# A backport adds what upstream added, MAINTAINERS as upstream has it.
			if [ -n "$backport" ]; then
				echo "#   $p: $added: no maintainer in MAINTAINERS (upstream's state)" \
					>>"$comments"
				continue
			fi
			echo "$p: ERROR: $added has no maintainer in MAINTAINERS" >>"$out"
			bad=$((bad + 1))
		done < <(sed -n 's|^+++ b/\(.*\)$|\1|p' "$f" | while read -r g; do
			grep -qxF -- "--- /dev/null" <(grep -B1 -xF -- "+++ b/$g" "$f") && echo "$g"
		done)
	else
		bad=$(grep -cE ': ERROR:' "$out" || true)
	fi
	grep -q '^Signed-off-by: ' <<<"$msg" || {
		echo "$p: ERROR: no Signed-off-by: line" >>"$out"
		bad=$((bad + 1))
	}
	if [ "$bad" -eq 0 ]; then
		echo "ok $n - $p$kind" >>"$tap.new"
	else
		echo "not ok $n - $p$kind" >>"$tap.new"
		failed=$((failed + 1))
	fi
	grep -E ': (ERROR|WARNING|CHECK):' "$out" | sed "s|^$patches/||; s/^/#   /" >>"$tap.new" ||
		true
	cat "$comments" >>"$tap.new"
done
mv "$tap.new" "$tap"
cat "$tap"
if [ $failed -eq 0 ] && complete "$tap" && [ -n "$cache" ] && mkdir -p "$cache"; then
	cp "$tap" "$cache/$key.tap.tmp" && mv "$cache/$key.tap.tmp" "$cache/$key.tap"
fi
[ $failed -eq 0 ]
