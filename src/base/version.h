/* version.h — the tool's name and version as reported by --version and in every report. */
#ifndef FP4_VERSION_H
#define FP4_VERSION_H
#define FP4DIAG_NAME "fp4diag"
#define FP4DIAG_VERSION "0.1.0"
#endif
