/* Test-only module for the loader suite: exports no descriptor at all. */
#include "config.h"

int sbxloop_not_a_descriptor(void);

int sbxloop_not_a_descriptor(void)
{
	return 42;
}
