/* test_cleanup.c — the signal-time removal of the temporary report file (cleanup.c): each case
 * runs in a forked child that registers a real file and raises a signal; the parent checks how
 * the child ended and whether the file is gone. */
#include "testutil.h"

#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/cleanup.h"

static bool file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void make_file(const char *p)
{
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("{\"half\": ", f);
    assert_int_equal(fclose(f), 0);
}

/* Child: register `path` (unless NULL), maybe unregister, maybe ignore sig first, raise sig,
 * then exit 0 if still alive. */
static int run_child(const char *path, int sig, bool unregister, bool ignore_first)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* A test run started in the background inherits SIGINT ignored: start from the default
         * disposition unless the case is about an ignored signal. */
        signal(sig, ignore_first ? SIG_IGN : SIG_DFL);
        if (path && fp4_cleanup_register(path) != FP4_OK) _exit(10);
        if (path && !unregister && (!fp4_cleanup_registered() ||
                                    strcmp(fp4_cleanup_registered(), path) != 0))
            _exit(11);
        if (unregister) fp4_cleanup_unregister();
        if (unregister && fp4_cleanup_registered()) _exit(12);
        raise(sig);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void test_signal_removes_registered_file(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        snprintf(path, sizeof path, "%s/.report.json.tmp%zu", dir, i);
        make_file(path);
        int status = run_child(path, sigs[i], false, false);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sigs[i]); /* re-raised: killed by the same signal */
        assert_false(file_exists(path));
    }
    fp4t_rmtree(dir);
}

static void test_unregistered_file_is_kept(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/report.json", dir);
    make_file(path);
    int status = run_child(path, SIGTERM, true, false);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGTERM);
    assert_true(file_exists(path)); /* renamed into place already: never removed */
    fp4t_rmtree(dir);
}

static void test_ignored_signal_stays_ignored(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/.tmp", dir);
    make_file(path);
    int status = run_child(path, SIGINT, false, true); /* like `nohup`: SIGINT ignored */
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(file_exists(path));
    fp4t_rmtree(dir);
}

/* fp4_cleanup_mkstemp creates and registers at once; a signal then removes the file. */
static void test_mkstemp_registers(void **state)
{
    (void)state;
    char *dir = fp4t_tmpdir();
    char tmpl[4200];
    snprintf(tmpl, sizeof tmpl, "%s/.r.json.tmpXXXXXX", dir);
    fflush(NULL);
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pipefd[0]);
        signal(SIGINT, SIG_DFL); /* see run_child */
        int fd = fp4_cleanup_mkstemp(tmpl);
        if (fd < 0 || !fp4_cleanup_registered() || strcmp(fp4_cleanup_registered(), tmpl)) _exit(10);
        if (write(fd, "{", 1) != 1) _exit(11);
        if (write(pipefd[1], tmpl, strlen(tmpl) + 1) != (ssize_t)(strlen(tmpl) + 1)) _exit(12);
        raise(SIGINT);
        _exit(0);
    }
    close(pipefd[1]);
    char made[4200] = "";
    assert_true(read(pipefd[0], made, sizeof made - 1) > 0);
    close(pipefd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGINT);
    assert_non_null(strstr(made, "/.r.json.tmp"));
    assert_false(file_exists(made));
    /* A failing mkstemp: -1 and nothing registered. */
    char bad[] = "/nonexistent-dir-fp4diag/xXXXXXX";
    assert_int_equal(fp4_cleanup_mkstemp(bad), -1);
    assert_null(fp4_cleanup_registered());
    fp4t_rmtree(dir);
}

static void test_too_long_path_is_refused(void **state)
{
    (void)state;
    size_t n = 70000;
    char *p = malloc(n + 1);
    assert_non_null(p);
    memset(p, 'a', n);
    p[n] = '\0';
    assert_int_equal(fp4_cleanup_register(p), FP4_ERR_INTERNAL);
    assert_null(fp4_cleanup_registered());
    free(p);
    fp4_cleanup_unregister(); /* harmless when nothing is registered */
    assert_null(fp4_cleanup_registered());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_removes_registered_file),
        cmocka_unit_test(test_unregistered_file_is_kept),
        cmocka_unit_test(test_ignored_signal_stays_ignored),
        cmocka_unit_test(test_mkstemp_registers),
        cmocka_unit_test(test_too_long_path_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
