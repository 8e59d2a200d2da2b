/* outfile.h: opening a command's output files safely: no hang on a FIFO without a reader,
 * and no output given a file that is another output or an input of the same command. */
#ifndef PACESIM_OUTFILE_H
#define PACESIM_OUTFILE_H
#include <stdio.h>

/* Open path for writing ("-": stdout) without blocking in open(): a FIFO with no reader
 * fails with ENXIO, reported as such, instead of waiting forever.  A name starting with '-'
 * (but "-" itself) is refused: it is an option an output option took for its value ("--csv
 * --quiet"); "./-x" names such a file.  NULL with one line on stderr ("PATH: why"). */
FILE *outfile_open(const char *path);

/* Whether path, the value of output option opt (NULL: not known), starts with '-' but is not
 * "-": an option the output option took for its name ("--csv --quiet"), refused with one line
 * on stderr (1); else 0. */
int outfile_optlike(const char *opt, const char *path);

/* Two paths naming one file: the same name, the same inode where both exist, or where
 * neither exists yet, the same name in the same directory ("x.csv" and "./x.csv"). */
int outfile_same(const char *a, const char *b);

#endif
