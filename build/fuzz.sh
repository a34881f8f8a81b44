#!/usr/bin/env bash
# build/fuzz.sh JOBS FUZZTIME MINIMIZE PKG:TARGET...
#
# Fuzzes each target for FUZZTIME (a duration, or Nx for N inputs), JOBS
# targets at a time, shrinking what it finds for MINIMIZE, and prints each
# target's output whole as it ends. Exits non-zero where any target failed;
# what the fuzzer found is in that package's testdata/fuzz/<target>/.
#
# Each package's test binary is built once and run for each of its
# targets as go test -fuzz runs it: in the package's folder, with the
# corpus cache go test uses. go test -fuzz links the binary again for every
# target (3-4 s of CPU each, for the root package's twenty-odd), and it
# instruments every package the binary holds for coverage, the standard
# library and gonum too; here only lathe's own packages are (-d=libfuzzer,
# the flag go test -fuzz gives), so that what guides the fuzzer is lathe's
# code, and the rest comes from the build cache that make unit filled
# (52 s instead of 87 s for the root package's binary from a cache without
# instrumented builds). Two targets at a time suit make test's short runs
# on two cores: a short run spends much of its time starting its workers
# and gathering its baseline coverage, on one core, which the other run's
# fuzzing fills.
set -u
jobs=$1 fuzztime=$2 minimize=$3
shift 3
go=${GO:-go}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=$("$go" env GOCACHE)/fuzz
instrument="-gcflags=$("$go" list -m)/...=-d=libfuzzer"

# Build each package's binary, and note its folder and import path.
declare -A bin_of=() dir_of=() path_of=()
for t in "$@"; do
	pkg=${t%%:*}
	[[ -n ${bin_of[$pkg]-} ]] && continue
	read -r dir path < <("$go" list -f '{{.Dir}} {{.ImportPath}}' "$pkg") || exit 1
	bin=$work/bin${#bin_of[@]}.test
	"$go" test -c "$instrument" -o "$bin" "$pkg" || { echo "fuzz.sh: $pkg does not build" >&2; exit 1; }
	bin_of[$pkg]=$bin dir_of[$pkg]=$dir path_of[$pkg]=$path
done

declare -A target_of=()
running=0 finished=0 failed=0

# finish waits for one running target and prints its output.
finish() {
	local pid status=0
	wait -n -p pid || status=$?
	local t=${target_of[$pid]}
	local log=$work/${t//[\/:.]/_}.log
	echo "== ${t#*:} (${t%%:*}) for $fuzztime"
	cat "$log"
	# The binary passes where no target has the name: a renamed target.
	if ((status == 0)) && grep -q '^testing: warning: no fuzz tests to fuzz' "$log"; then
		echo "== ${t#*:}: no such fuzz target in ${t%%:*}"
		status=1
	fi
	if ((status != 0)); then
		echo "== ${t#*:}: FAILED"
		failed=1
	fi
	running=$((running - 1)) finished=$((finished + 1))
}

for t in "$@"; do
	while ((running >= jobs)); do finish; done
	pkg=${t%%:*}
	(cd "${dir_of[$pkg]}" && exec "${bin_of[$pkg]}" -test.paniconexit0 -test.run '^$' \
		-test.fuzz "^${t#*:}\$" -test.fuzztime "$fuzztime" -test.fuzzminimizetime "$minimize" \
		-test.fuzzcachedir "$cache/${path_of[$pkg]}") >"$work/${t//[\/:.]/_}.log" 2>&1 &
	target_of[$!]=$t
	running=$((running + 1))
done
while ((running > 0)); do finish; done
if ((finished != $#)); then
	echo "fuzz.sh: $finished of $# targets ran" >&2
	exit 1
fi
exit $failed
