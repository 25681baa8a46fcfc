/* api_demo.c — a program outside the project, built by src/tests/cli/api_install.sh against the
 * installed header and library with `pkg-config --cflags --libs fp4diag`: lists FILE's tensors
 * (to stderr), analyses TENSOR under OPTIONS and prints each configuration's numbers (%.17g)
 * on stdout and the tensor's JSON to JSON_OUT.
 * usage: api_demo FILE TENSOR "OPTIONS" JSON_OUT */
#include <fp4diag.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: api_demo FILE TENSOR OPTIONS JSON_OUT\n");
        return 2;
    }
    fprintf(stderr, "fp4diag library %s (%d)\n", fp4d_version(), fp4d_version_number());
    fp4d_config *cfg = NULL;
    fp4d_input *in = NULL;
    fp4d_result *r = NULL;
    fp4d_status st = fp4d_config_parse(argv[3], &cfg);
    if (st == FP4D_OK) st = fp4d_open(argv[1], &in);
    if (st == FP4D_OK) {
        for (int i = 0; i < fp4d_tensor_count(in); i++) {
            fp4d_tensor_info t;
            if (fp4d_tensor_get(in, i, &t) == FP4D_OK)
                fprintf(stderr, "%s %s rank %d\n", t.name, t.dtype, t.rank);
        }
        st = fp4d_analyze(in, argv[2], cfg, &r);
    }
    if (st != FP4D_OK) {
        fprintf(stderr, "api_demo: %s (%s)\n", fp4d_last_error(), fp4d_status_name(st));
        fp4d_config_free(cfg);
        fp4d_close(in);
        return (int)st;
    }
    for (int i = 0; i < fp4d_result_count(r); i++) {
        fp4d_metrics m;
        fp4d_result_metrics(r, i, &m);
        printf("%s %s %d %d %s sqnr_db=%.17g alpha=%.17g delta=%.17g nmse=%.17g "
               "bucket_ratio_15=%.17g elements=%llu\n",
               m.format, m.scale, m.block, m.rht, m.rounding, m.sqnr_db, m.alpha, m.delta,
               m.nmse, m.bucket_ratio_15, (unsigned long long)m.elements);
    }
    FILE *f = fopen(argv[4], "w");
    int rc = !f || fputs(fp4d_result_json(r), f) < 0;
    if (f && fclose(f) != 0) rc = 1;
    fp4d_result_free(r);
    fp4d_close(in);
    fp4d_config_free(cfg);
    return rc;
}
