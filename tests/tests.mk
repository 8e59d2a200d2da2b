# tests.mk -- extra test rules, included by the top Makefile.  Several engineers append
# here; each block says whose it is.

# -- robustness: bad-input catalogue, fuzzing, sanitizers, allocation failure, bench ----
EXTRA_TESTS += tests/bad_inputs.sh
