#!/usr/bin/env bash
# Fails when a file git tracks is an executable binary (ELF, Mach-O or PE) or larger than
# 5 MB: build outputs belong in bin/ (ignored), not in the tree. Run by `make test`; takes the
# repository to check as its argument (default: this one).
set -euo pipefail
repo="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
limit=$((5 * 1024 * 1024))
bad=0
cd "$repo"
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue # deleted in the work tree
	size=$(stat -c %s -- "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "check-tree: $f is $size bytes (over 5 MB): keep large files out of the tree" >&2
		bad=1
	fi
	magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
	case "$magic" in
	7f454c46 | feedface | feedfacf | cefaedfe | cffaedfe | cafebabe | 4d5a*)
		echo "check-tree: $f is an executable binary (magic $magic): build outputs go to bin/" >&2
		bad=1
		;;
	esac
done < <(git ls-files -z)
if [ "$bad" -ne 0 ]; then
	exit 1
fi
echo "check-tree: no executable binary and nothing over 5 MB among $(git ls-files | wc -l) tracked files"
