#!/usr/bin/env bash
# build/fuzz.sh JOBS FUZZTIME MINIMIZE PKG:TARGET...
#
# Fuzzes each target for FUZZTIME (a duration, or Nx for N inputs), JOBS
# targets at a time, shrinking what it finds for MINIMIZE, and prints each
# target's output whole as it ends. Exits non-zero where any target failed;
# what the fuzzer found is in that package's testdata/fuzz/<target>/.
#
# Two at a time suit make test's short runs on two cores: a short run
# spends much of its time linking its test binary and starting its
# workers, on one core, which the other run's fuzzing fills.
set -u
jobs=$1 fuzztime=$2 minimize=$3
shift 3
go=${GO:-go}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

declare -A target_of=()
running=0 finished=0 failed=0

# finish waits for one running target and prints its output.
finish() {
	local pid status=0
	wait -n -p pid || status=$?
	local t=${target_of[$pid]}
	echo "== ${t#*:} (${t%%:*}) for $fuzztime"
	cat "$logs/${t//[\/:]/_}"
	# go test passes where no target has the name: a renamed target.
	if ((status == 0)) && grep -q '^testing: warning: no fuzz tests to fuzz' "$logs/${t//[\/:]/_}"; then
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
	"$go" test -run '^$' -fuzz "^${t#*:}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "${t%%:*}" \
		>"$logs/${t//[\/:]/_}" 2>&1 &
	target_of[$!]=$t
	running=$((running + 1))
done
while ((running > 0)); do finish; done
if ((finished != $#)); then
	echo "fuzz.sh: $finished of $# targets ran" >&2
	exit 1
fi
exit $failed
