/*
 * What the egress suites (test-egress-*.c) share: a scratch directory
 * with an sbxloop.yaml loaded into the config under test. Only they
 * include it.
 */
#ifndef SBXLOOP_TESTS_EGRESS_SUPPORT_H
#define SBXLOOP_TESTS_EGRESS_SUPPORT_H

#include "config/conf.h"

extern char dir[256];
extern char cfg_path[512];
extern struct sl_config *cfg;
void setup(void);
void teardown(void);
void load(const char *yaml);
int in_list(char **list, const char *s);

#endif
