// Package testenv is what lathe's tests share about the machine they run on:
// whether a device that cannot be opened may be skipped, and the summary of
// what each device ran.
//
// A test that needs a device it cannot open calls [SkipDevice]. Where the run
// requires that device (LATHE_REQUIRE_DEVICES, which `make test` sets to the
// devices `make deps` installs), the test fails instead: a missing Dawn must
// not turn every wgpu test into a silent pass, which go test without -v
// would print as ok. Every such skip, and the case counts of the
// conformance suites ([Record]), go to the summary file named by
// LATHE_TEST_SUMMARY, which build/testsummary prints at the end of
// `make test`.
//
// Like the standard library's internal/testenv it is imported by tests only,
// and depends on nothing of lathe's, so that every layer's tests can use it.
package testenv
