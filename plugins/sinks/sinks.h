/*
 * Private to the sinks module: the two components it provides and the
 * text helpers they share.
 */
#ifndef SBXLOOP_SINKS_H
#define SBXLOOP_SINKS_H

#include <sbxloop/sink.h>

extern const struct sbxloop_sink_ops sinks_plain_ops;
extern const struct sbxloop_config_key sinks_plain_keys[];
extern const struct sbxloop_sink_ops sinks_jsonl_ops;
extern const struct sbxloop_config_key sinks_jsonl_keys[];

#endif
