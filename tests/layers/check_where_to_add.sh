#!/usr/bin/env bash
# docs/architecture.md's "Where to add things" and its layer table, checked against the tree
# (issue 28): the lists a newcomer follows must be the places the code really has.
#   1. Every path the section names exists.
#   2. The engines of layer 4 are exactly the folders with an OpVisitor implementation, and
#      each has one entry in predict/engine_registry.cpp and one row in check_includes.sh.
#   3. The files the op-kind recipe names as switching over OpKind (the work counter, the
#      training lowering) are the files outside the engines that do.
# Usage: check_where_to_add.sh SOURCE_DIR [DOC]   (DOC: another doc to check, for the self test)
set -u
root="${1:?usage: check_where_to_add.sh SOURCE_DIR [DOC]}"
doc="${2:-$root/docs/architecture.md}"
fail=0
complain() { echo "$(basename "$doc"): $*"; fail=1; }

section=$(sed -n '/^## Where to add things/,/^## [^W]/p' "$doc")
[[ -n "$section" ]] || complain 'no "## Where to add things" section'

# 1. Paths: backticked words with a slash (globs and placeholders such as <name> skipped).
while read -r p; do
  [[ -z "$p" || "$p" == *'<'* || "$p" == *'*'* ]] && continue
  [[ -e "$root/$p" ]] || complain "\"Where to add things\" names $p, which does not exist"
done < <(grep -o '`[A-Za-z0-9_./-]*/[A-Za-z0-9_./-]*`' <<<"$section" | tr -d '`' | sort -u)

# 2. Engines.
doc_engines=$(sed -n 's/^ 4  //p' "$doc" | grep -oE '(devices|sim)/[a-z_]+' | sort -u)
code_engines=$(cd "$root" && grep -rlE 'public OpVisitor<' --include='*.hpp' --include='*.cpp' --include='*.cu' devices sim |
  xargs -r -n1 dirname | sort -u)
[[ -n "$doc_engines" ]] || complain "layer 4 of the table lists no engine folder"
if [[ "$doc_engines" != "$code_engines" ]]; then
  complain "layer 4 lists engines [$(echo $doc_engines)] but OpVisitor is implemented in [$(echo $code_engines)]"
fi
registered=$(grep -cE '^\s*\{"[a-z_]+", \[\]' "$root/predict/engine_registry.cpp")
engines=$(wc -w <<<"$doc_engines")
(( registered == engines )) || complain "$engines engines in the table, $registered in predict/engine_registry.cpp"
for e in $doc_engines; do
  grep -q "^ *$e/\*) echo \"$e 4\"" "$root/tests/layers/check_includes.sh" ||
    complain "engine $e has no row in tests/layers/check_includes.sh"
done

# 3. Op kinds: the files outside the engines that switch over OpKind.
op_recipe=$(grep -A3 '^- \*\*An op kind\*\*' <<<"$section" | tr '\n' ' ')
named=$(grep -oE '`models/[a-z_/]+\.cpp`' <<<"$op_recipe" | tr -d '`' | sort -u)
switching=$(cd "$root" && grep -lE 'switch \(op\.kind\)|switch \(kind\)' models/*.cpp | sort -u)
[[ "$named" == "$switching" ]] ||
  complain "the op-kind recipe names [$(echo $named)] but [$(echo $switching)] switch over OpKind"
grep -q 'models/op_kinds.hpp' <<<"$op_recipe" || complain "the op-kind recipe does not name models/op_kinds.hpp"

(( fail == 0 )) && echo "ok: $(wc -w <<<"$doc_engines") engines, $(wc -w <<<"$switching") OpKind switches, paths exist"
exit $fail
