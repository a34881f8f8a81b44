#!/usr/bin/env bash
# make mutants: plants each bug listed in build/mutants.txt, one at a time,
# in a scratch copy of the working tree (tracked and untracked files, not
# the ignored ones), runs the packages the list names for it, and reports
# whether the suite failed (killed) or passed (survived). The unmutated copy
# runs first: a suite that fails without a bug kills nothing. Not part of
# `make test`; it takes minutes.
#
#   build/mutants.sh [list] [name-regexp]
#
# Runs with the devices `make test` requires (LATHE_REQUIRE_DEVICES), so a
# bug that only hides a device is caught too. Exits 1 where a mutant
# survived or could not be planted.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
list=${1:-build/mutants.txt}
only=${2:-.}
export LATHE_REQUIRE_DEVICES=${LATHE_REQUIRE_DEVICES:-cpu,wgpu:0}
timeout_s=${MUTANT_TIMEOUT:-900}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/lathe-mutants.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -C "$scratch" -xf -
[ -e .deps ] && ln -s "$root/.deps" "$scratch/.deps"
logs=$root/out/mutants
mkdir -p "$logs"

mutants=()
while IFS= read -r line; do
	case "$line" in '#'* | '') continue ;; esac
	IFS=$'\t' read -r name _ _ _ <<<"$line"
	[[ $name =~ $only ]] && mutants+=("$line")
done <"$list"

run() { # log packages...
	local log=$1
	shift
	(cd "$scratch" && timeout "$timeout_s" go test -count=1 -failfast "$@") >"$log" 2>&1
}

pkgs=()
for m in "${mutants[@]}"; do
	IFS=$'\t' read -r _ _ _ p <<<"$m"
	for q in $p; do [[ " ${pkgs[*]} " == *" $q "* ]] || pkgs+=("$q"); done
done
echo "mutants: the unmutated tree first (${pkgs[*]})"
if ! run "$logs/baseline.log" "${pkgs[@]}"; then
	echo "mutants: the suite fails without a bug planted; see $logs/baseline.log" >&2
	exit 1
fi

killed=0 survived=0 unplanted=0
results=()
for m in "${mutants[@]}"; do
	IFS=$'\t' read -r name file script p <<<"$m"
	cp "$scratch/$file" "$scratch/$file.orig"
	sed -i -e "$script" "$scratch/$file"
	if cmp -s "$scratch/$file" "$scratch/$file.orig"; then
		results+=("NOT PLANTED  $name ($file: the pattern no longer matches)")
		unplanted=$((unplanted + 1))
	else
		start=$SECONDS
		# shellcheck disable=SC2086
		if run "$logs/$name.log" $p; then
			results+=("SURVIVED     $name ($((SECONDS - start))s; $p)")
			survived=$((survived + 1))
		elif grep -qE '^FAIL.*\[(build|setup) failed\]' "$logs/$name.log"; then
			# A mutant that does not compile proves nothing about the tests.
			results+=("NOT PLANTED  $name (it does not build; see out/mutants/$name.log)")
			unplanted=$((unplanted + 1))
		else
			# The deepest of the first failing tests names the case that caught it.
			why=$(grep -E -m6 '^\s*--- FAIL' "$logs/$name.log" | sed 's/^ *--- FAIL: //; s/ (.*//' |
				awk '{ if (length($0) > length(best)) best = $0 } END { print best }')
			grep -q 'panic:' "$logs/$name.log" && why="${why:+$why, }a panic"
			grep -q 'test timed out\|^Terminated' "$logs/$name.log" && why="${why:+$why, }a timeout"
			results+=("killed       $name ($((SECONDS - start))s; by ${why:-see the log})")
			killed=$((killed + 1))
		fi
	fi
	mv "$scratch/$file.orig" "$scratch/$file"
	echo "${results[-1]}"
done

echo
echo "mutants: killed $killed of ${#mutants[@]}, survived $survived, not planted $unplanted (logs in out/mutants/)"
[ "$survived" = 0 ] && [ "$unplanted" = 0 ]
