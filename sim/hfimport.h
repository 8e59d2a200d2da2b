/* hfimport: a model file (docs/scenarios.md, "model") from a Hugging Face config.json, for
 * the families hfimport.c lists with the transformers configuration class each maps. */
#ifndef PACESIM_HFIMPORT_H
#define PACESIM_HFIMPORT_H

#include <stdio.h>

/* Read config.json at path and write the model file to out (name: the model's name, NULL or
 * "": the file's stem, or its folder's for config.json); a warning (sliding windows priced as
 * full attention) to warn (may be NULL).  0; -1 bad input, with one line
 * "file:line:col: key: message" in err; -2 an output failure (err says). */
int hf_import(const char *path, const char *name, FILE *out, FILE *warn, char *err, size_t errn);

#endif
