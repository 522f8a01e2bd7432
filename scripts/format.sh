#!/bin/sh
# Lay out every C file of the repository as .clang-format says.
#   scripts/format.sh           rewrite the files that differ
#   scripts/format.sh --check   change nothing; list the files that differ
#                               and exit 1 if there is any
set -eu
cd "$(dirname "$0")/.."
check=false
[ "${1:-}" = --check ] && check=true
bad=0
for f in $(git ls-files '*.c' '*.h'); do
	if $check; then
		if ! clang-format "$f" | cmp -s - "$f"; then
			echo "$f: not laid out as .clang-format says (scripts/format.sh fixes it)"
			bad=1
		fi
	else
		clang-format -i "$f"
	fi
done
exit $bad
