/*
 * Sanitizer defaults linked into the ASan+UBSan build of the fork
 * (make check-asan-fork, build/rsync-de-asan).
 *
 * An rsync started by sshd or by a daemon does not inherit ASAN_OPTIONS,
 * so the options the suite needs are compiled in: no leak checking (rsync
 * frees little at exit by design, and LeakSanitizer's exit code would read
 * as an rsync error in every test), no link-order check (upstream's
 * LD_PRELOAD shims load before the ASan runtime), and UBSan stops at the
 * first report with a stack trace.  ASAN_OPTIONS, when set, still wins.
 */

__attribute__((visibility("default"), used))
const char *__asan_default_options(void)
{
	return "detect_leaks=0:verify_asan_link_order=0";
}

__attribute__((visibility("default"), used))
const char *__ubsan_default_options(void)
{
	return "print_stacktrace=1:halt_on_error=1";
}
