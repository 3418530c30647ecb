#!/usr/bin/env bash
# AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer over qklab's attack
# surface: the code that reads what others made (presets, --set values, sweep files, lessons,
# databases, shards, imported rows). Builds in ${QKLAB_SANITIZE_DIR:-build-sanitize} (-O1 -g,
# asserts on, -D_GLIBCXX_ASSERTIONS for bounds-checked containers), runs the suites below and
# exits non-zero on a failing test or on any sanitizer report, also one from a qklab-cli that a
# test started. A second run reuses the build folder.
#
#   scripts/sanitize.sh    on 2 cores: the build about 35 min the first time (LibTorch's
#                          precompiled header and the engine under ASan are most of it), the
#                          tests 5-8 min (docs/RELIABILITY.md has the last result)
#
# The suites: the fuzzers (config_fuzz_test, store_fuzz_test, input_fuzz_test), the hostile
# files (store_hostile_test, input_files_test, cli_hostile_test, cli_files_test), the store, its
# imports and schema (store_*_test, record_columns_test), the readers of sweep files, lessons,
# configs and stored runs (sweep_test, lesson_test, lesson_values_test, compare_test,
# config_test), and two small units that findings of this script left tests in (cli_table_test,
# spikes_test). That is where hostile bytes meet qklab's own parsing and SQLite's results, and
# it is fast. The engine's suites (LibTorch's numerics, minutes each) and the GUI are left out.
# Tests that start qklab-cli start this build's, so the CLI is sanitized too, training included.
#
# LibTorch is not instrumented: leaks whose allocation passes through LibTorch or its OpenMP
# runtime are suppressed (scripts/sanitize-lsan.supp); every other leak fails the run. ASan and
# LSan reports go to files under BUILD/sanitizer-logs, printed at the end, so that none is lost
# in a test's captured stderr. A UB finding stops its process with exit 1
# (-fno-sanitize-recover); GCC's UBSan runtime writes to stderr whatever log_path says, so a
# report shows in the test's output, or a qklab-cli the test ran fails its exit-status check
# (and any report that reached ctest's log fails the run too).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
build=${QKLAB_SANITIZE_DIR:-build-sanitize}
started=$(date +%s)
phase_start=$started
phase() {  # "sanitize: NAME took N s", as scripts/test.sh says it
  local now
  now=$(date +%s)
  echo "sanitize: $1 took $((now - phase_start)) s ($((now - started)) s in all)"
  phase_start=$now
}
suites=(config_fuzz_test store_fuzz_test input_fuzz_test store_hostile_test input_files_test
        cli_hostile_test cli_files_test record_columns_test store_round_trip_test
        store_schema_test store_runs_test store_resume_test store_comparisons_test
        store_qk_clips_test store_sqlite_db_test store_output_logits_test store_guard_test
        sweep_test lesson_test lesson_values_test compare_test config_test cli_table_test
        spikes_test)
# GCC's "undefined" leaves out float-cast-overflow (a hostile 1e300 cast to an integer).
sanitize="-fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer"
sanitize+=" -fno-sanitize-recover=undefined,float-cast-overflow"
# GCC's manual advises against -Werror with the sanitizers: their checks make GCC see
# "maybe uninitialized" values that are not (in LibTorch's headers, inlined into the engine).
# build/ keeps that warning an error; here it is off.
cxx_flags="$sanitize -D_GLIBCXX_ASSERTIONS -Wno-maybe-uninitialized"
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitize-lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_FLAGS="$cxx_flags" -DCMAKE_EXE_LINKER_FLAGS="$sanitize" \
  -DCMAKE_SHARED_LINKER_FLAGS="$sanitize" -DCMAKE_MODULE_LINKER_FLAGS="$sanitize" \
  -DQKLAB_GUI=OFF -DQKLAB_BENCH=OFF -DQKLAB_WERROR=ON >/dev/null
cmake --build "$build" -j"$jobs" --target qklab-cli qklab-cli-extra-columns "${suites[@]}"
phase build

# ctest names tests Suite.Test: select the GoogleTest suites these programs hold, and check
# that the selection is exactly their tests (a suite of the same name elsewhere would add more).
names=()
expected=0
for t in "${suites[@]}"; do
  listed=$("$build/tests/$t" --gtest_list_tests)
  mapfile -t -O "${#names[@]}" names < <(grep -v '^ ' <<<"$listed" | sed 's/\..*//')
  expected=$((expected + $(grep -c '^ ' <<<"$listed")))
done
regex="^($(printf '%s\n' "${names[@]}" | sort -u | paste -sd '|'))\\."
selected=$(ctest --test-dir "$build" -N -R "$regex" | sed -n 's/^Total Tests: //p')
if [ "$selected" != "$expected" ]; then
  echo "sanitize: the regex selects $selected tests, the ${#suites[@]} programs hold $expected" >&2
  exit 1
fi

logs=$(cd "$build" && pwd)/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
export ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$logs/asan"
status=0
ctest --test-dir "$build" -R "$regex" -j"$jobs" --output-on-failure || status=1
phase "ctest -j$jobs ($expected tests)"
reports=("$logs"/*)
if [ -e "${reports[0]}" ]; then
  for r in "${reports[@]}"; do
    echo "sanitize: ---- $r"
    cat "$r"
  done
  echo "sanitize: ${#reports[@]} sanitizer report(s), above" >&2
  status=1
fi
if grep -q 'runtime error:' "$build/Testing/Temporary/LastTest.log" 2>/dev/null; then
  grep -B2 -A12 'runtime error:' "$build/Testing/Temporary/LastTest.log"
  echo "sanitize: UndefinedBehaviorSanitizer reports in the tests' output, above" >&2
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "sanitize: clean: $expected tests of ${#suites[@]} suites under ASan + UBSan"
fi
exit "$status"
