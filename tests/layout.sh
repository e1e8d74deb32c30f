#!/bin/sh
# The layout rules of docs/architecture.md, checked on the source tree
# (a test of `make check`; SBXLOOP_SRCDIR or the directory above this
# script is the tree). Each rule prints the offending lines and fails.
set -u
top=${SBXLOOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 99
fail=0
pass=0

# rule NAME LINES: the rule is broken when LINES is not empty
rule() {
	out=$2
	if [ -n "$out" ]; then
		echo "FAIL: $1"
		echo "$out" | sed 's/^/  /'
		fail=$((fail + 1))
	else
		echo "ok: $1"
		pass=$((pass + 1))
	fi
}

product=$(find common core worker plugins -name '*.[ch]' | sort)

# 1. The core knows no backend: it runs no `sbx` and names no sbx
#    component in its logic (the schema's defaults are data).
rule "nothing under core/ or common/ drives sbx or names its components" \
	"$(grep -nE '"sbx(-proxy)?"|`sbx |execvp?\("sbx' \
		$(find common core -name '*.[ch]') |
		grep -v '^core/config/conf_schema.c:')"

# 2. The worker uses its own headers, common/ and the SDK's vocabulary,
#    never a core header.
rule "the worker includes only common/ and system headers" \
	"$(grep -n '#include' worker/*.c worker/*.h |
		grep -vE '#include <[A-Za-z0-9_/]+\.h>|"config\.h"|"(worker|stream|github)\.h"|"common/[a-z0-9_]+\.h"' |
		grep '#include "')"
rule "the worker takes only the event vocabulary from the SDK" \
	"$(grep -n '#include <sbxloop/' worker/*.c worker/*.h |
		grep -v '<sbxloop/events\.h>')"

# 3. No source file over 1,200 lines, product or test.
rule "no source file is over 1,200 lines" \
	"$(for f in $product $(find tests bench examples -name node_modules -prune -o -name '*.[ch]' -print); do
		n=$(wc -l <"$f")
		[ "$n" -le 1200 ] || echo "$f: $n lines"
	done)"

# 4. One vocabulary: event types come from <sbxloop/events.h>, state
#    names from <sbxloop/states.h>.
rule "no event type is spelled at an emit" \
	"$(grep -nE 'emit[a-z_]*\([^;]*"[a-z]+\.[a-z_]+"' $product)"
rule "no state name is spelled in a comparison" \
	"$(grep -nE 'strcmp\([^,;]*state[^,;]*, *"[a-z]+"\)' $product)"

# 5. The SDK's ABI version has one source: plugin.h; configure reads it.
rule "configure.ac does not write the ABI numbers again" \
	"$(grep -nE 'AC_SUBST\(\[SBXLOOP_ABI_(MAJOR|MINOR)\], *\[[0-9]' \
		configure.ac)"

# 6. Plugins never include a core header (what both need is in common/).
rule "plugins include no core header" \
	"$(grep -n '#include' $(find plugins -name '*.[ch]') |
		grep -E '"(\.\./)*core/|"(host|engine|phases|cli|config)/')"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
