/* test_output.c — -o is never an input (fp4_output_prepare, SPEC §9): the same file under
 * another name (hard link, symbolic link, ./ path) is refused with FP4_ERR_USAGE naming it,
 * whichever of the inputs it is; an entry of an input directory too; other files are fine
 * and the refused file is left as it was. */
#include "testutil.h"

#include <sys/stat.h>
#include <unistd.h>

#include "report/output.h"

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *slurp(const char *path)
{
    static char buf[256];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* fp4_output_prepare(out, inputs) is refused as an input, the message naming `in`. */
static void refused_at(const char *out, const char *const *inputs, int n, const char *in,
                       int line)
{
    fp4_status st = fp4_output_prepare(out, inputs, n);
    const char *msg = st == FP4_OK ? "(none)" : fp4_last_error();
    if (st != FP4_ERR_USAGE || !strstr(msg, in) || !strstr(msg, "would overwrite")) {
        print_error("line %d: -o %s: status %d, message: %s\n", line, out, (int)st, msg);
        _fail(__FILE__, line);
    }
    fp4_output_forget();
}
#define refused(out, inputs, n, in) refused_at(out, inputs, n, in, __LINE__)

static void test_output_never_an_input(void **state)
{
    (void)state;
    char *d = fp4t_tmpdir();
    char in[4200], in2[4200], other[4200], hard[4200], sym[4200], dotted[4200], sub[4200],
        entry[4200];
    snprintf(in, sizeof in, "%s/in.h5", d);
    snprintf(in2, sizeof in2, "%s/in2.h5", d);
    snprintf(other, sizeof other, "%s/report.json", d);
    snprintf(hard, sizeof hard, "%s/hard.json", d);
    snprintf(sym, sizeof sym, "%s/sym.json", d);
    snprintf(dotted, sizeof dotted, "%s/./in.h5", d);
    snprintf(sub, sizeof sub, "%s/dir", d);
    snprintf(entry, sizeof entry, "%s/dir/model.safetensors", d);
    put(in, "input one\n");
    put(in2, "input two\n");
    put(other, "old report\n");
    assert_int_equal(link(in2, hard), 0);
    assert_int_equal(symlink(in, sym), 0);
    assert_int_equal(mkdir(sub, 0755), 0);
    put(entry, "an entry\n");

    const char *one[1] = {in};
    const char *two[2] = {in, in2};
    const char *missing_first[2] = {"/nonexistent/fp4diag-test/x.h5", in2};
    const char *dir_in[1] = {sub};
    /* the input itself, by every name */
    refused(in, one, 1, in);
    refused(dotted, one, 1, in);
    refused(sym, one, 1, in);
    /* the second input, and through a hard link (another name, the same inode) */
    refused(in2, two, 2, in2);
    refused(hard, two, 2, in2);
    refused(hard, missing_first, 2, in2);
    /* an entry of an input directory (a safetensors directory: any file in it) */
    refused(entry, dir_in, 1, sub);
    /* the inputs are untouched */
    assert_string_equal(slurp(in), "input one\n");
    assert_string_equal(slurp(in2), "input two\n");
    /* another file (existing or new), with the same inputs: fine */
    assert_int_equal(fp4_output_prepare(other, two, 2), FP4_OK);
    fp4_output_forget();
    snprintf(other, sizeof other, "%s/new.json", d);
    assert_int_equal(fp4_output_prepare(other, two, 2), FP4_OK);
    fp4_output_forget();
    /* the hard link is fine when its twin is not an input */
    assert_int_equal(fp4_output_prepare(hard, one, 1), FP4_OK);
    fp4_output_forget();
    /* stdout needs no check */
    assert_int_equal(fp4_output_prepare("-", one, 1), FP4_OK);
    assert_int_equal(fp4_output_prepare(NULL, one, 1), FP4_OK);
    fp4_output_forget();
    fp4t_rmtree(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_never_an_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
