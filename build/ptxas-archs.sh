#!/usr/bin/env bash
# Assembles every PTX module with ptxas for each architecture from sm_70 to
# sm_90, as the driver's JIT would for that GPU (the PTX carries .target
# sm_70, so each of them must take it). Used by `make ptx-archs` (with
# .deps/cuda's ptxas or one on PATH) and by gpu-check.sh's ptxas step.
#
#   build/ptxas-archs.sh PTXDIR [SECONDS]
#
# Prints one summary line last. Exit 0: every module assembled for every
# architecture this ptxas supports; 1: a module failed, or time ran out;
# 2: no ptxas (skipped). An architecture that this ptxas does not know
# (CUDA 13 dropped sm_70 and sm_72 from its offline compiler) is reported
# by name as the toolkit's refusal, not as a failure of the PTX.
set -u
dir=${1:?usage: ptxas-archs.sh PTXDIR [SECONDS]}
limit=${2:-300}
archs=(sm_70 sm_72 sm_75 sm_80 sm_86 sm_87 sm_89 sm_90)
ptxas=${PTXAS:-}
[ -n "$ptxas" ] || ptxas=$(command -v ptxas 2>/dev/null) || ptxas=""
[ -n "$ptxas" ] || { [ -x "$(dirname "$0")/../.deps/cuda/bin/ptxas" ] && ptxas=$(dirname "$0")/../.deps/cuda/bin/ptxas; }
[ -n "$ptxas" ] || [ ! -x /usr/local/cuda/bin/ptxas ] || ptxas=/usr/local/cuda/bin/ptxas
if [ -z "$ptxas" ]; then
	echo "ptxas-archs: skip: no ptxas (PATH, .deps/cuda/bin, /usr/local/cuda/bin)"
	exit 2
fi
mods=("$dir"/*.ptx)
[ -e "${mods[0]}" ] || { echo "ptxas-archs: FAIL: no PTX in $dir"; exit 1; }
version=$("$ptxas" --version | tail -1)
target=$(grep -h -m1 '^\.target' "${mods[@]}" | sort -u | paste -sd' ')
work=$(mktemp -d "${TMPDIR:-/tmp}/ptxas-archs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Which architectures this ptxas knows: one tiny module each.
printf '.version 6.0\n.target sm_70\n.address_size 64\n' >"$work/probe.ptx"
known=() refused=()
for a in "${archs[@]}"; do
	if msg=$("$ptxas" -arch="$a" -o /dev/null "$work/probe.ptx" 2>&1); then
		known+=("$a")
	else
		refused+=("$a: $(echo "$msg" | head -1 | cut -c1-120)")
	fi
done

# Every module for every known architecture, one ptxas per core, under
# one timeout for all. A warning fails the module, except ptxas's note that
# a kernel's __launch_bounds__ asks more threads of a multiprocessor than
# the architecture holds (the reductions' 8 blocks of 256 threads, an
# occupancy bound tuned for sm_80 and sm_90): ptxas ignores the bound there
# and the kernel is the same as without it (NOTE, counted as assembled).
jobs=$(nproc 2>/dev/null || echo 4)
for a in "${known[@]}"; do for m in "${mods[@]}"; do echo "$a $m"; done; done |
	timeout -k 5 "$limit" xargs -P "$jobs" -n 2 sh -c '
		out=$("$0" -arch="$1" -o /dev/null "$2" 2>&1)
		rc=$?
		rest=$(echo "$out" | sed "s/ptxas warning : Value of threads per SM for entry [A-Za-z0-9_]* is out of range. .minnctapersm will be ignored//" | tr -d " \n")
		if [ $rc -eq 0 ] && [ -n "$out" ] && [ -z "$rest" ]; then
			echo "NOTE $1 $(basename "$2"): $(echo "$out" | grep -c minnctapersm) kernels with a __launch_bounds__ above what the architecture holds (ignored there)"
			echo "OK $1 $(basename "$2")"
			exit 0
		fi
		if [ $rc -ne 0 ]; then echo "FAIL $1 $(basename "$2"): $(echo "$out" | head -3 | tr "\n" " ")"
		elif [ -n "$out" ]; then echo "WARN $1 $(basename "$2"): $(echo "$out" | head -3 | tr "\n" " ")"
		else echo "OK $1 $(basename "$2")"; fi' "$ptxas" >"$work/results"
rc=$?
grep -v '^OK\|^NOTE' "$work/results" | head -20
notes=$(grep -c '^NOTE' "$work/results")
ok=$(grep -c '^OK' "$work/results")
bad=$(grep -c '^FAIL\|^WARN' "$work/results")
want=$((${#known[@]} * ${#mods[@]}))
line="${#mods[@]} modules ($target) x ${#known[@]} archs (${known[*]}): $ok assembled, $bad failed; $version"
if [ "$notes" -gt 0 ]; then
	line="$line; $notes with occupancy bounds that the architecture ignores ($(grep '^NOTE' "$work/results" | cut -d' ' -f2,3 | tr -d : | paste -sd, -))"
fi
if [ ${#refused[@]} -gt 0 ]; then
	line="$line; this ptxas refuses $(printf '%s; ' "${refused[@]}")(the toolkit's limit, not the PTX's)"
fi
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "ptxas-archs: FAIL: timed out after ${limit}s: $line"
	exit 1
fi
if [ "$bad" -ne 0 ] || [ "$ok" -ne "$want" ] || [ ${#known[@]} -eq 0 ]; then
	echo "ptxas-archs: FAIL: $line"
	exit 1
fi
echo "ptxas-archs: pass: $line"
