#!/bin/bash
# check-includes.sh [SRC]: fail when a file under SRC (default src) includes
# a header of a layer above its own. The layers, each using only those
# before it (src/README.md says what each holds):
#
#   util  perfdata  symbols  session  profile  output  cmd
#
# Beside them: bpf/ (the BPF program and the header it shares with user
# space) uses nothing; record/ (the recorder) uses util, perfdata, symbols
# and bpf, and only cmd/ uses it. src/main.c may use anything.
# An include "DIR/..." of a DIR that is no folder of SRC fails too (a
# header left behind by a move). Run by `make` before anything is built.
set -u
SRC=${1:-src}

# The folders a folder's files may include from (its own included).
allowed() {
	case $1 in
	util)     echo "util" ;;
	perfdata) echo "util perfdata" ;;
	symbols)  echo "util perfdata symbols" ;;
	session)  echo "util perfdata symbols session" ;;
	profile)  echo "util perfdata symbols session profile" ;;
	output)   echo "util perfdata symbols session profile output" ;;
	bpf)      echo "bpf" ;;
	record)   echo "util perfdata symbols bpf record" ;;
	cmd|.)    echo "util perfdata symbols session profile output bpf record cmd" ;;
	*)        echo "" ;;
	esac
}

bad=0
while IFS= read -r f; do
	rel=${f#"$SRC"/}
	case $rel in
	*/*) top=${rel%%/*} ;;
	*)   top=. ;;
	esac
	ok=" $(allowed "$top") "
	if [ "$ok" = "  " ]; then
		echo "$f: folder $top is no layer of scripts/check-includes.sh (add it there and to src/README.md)" >&2
		bad=1
		continue
	fi
	# every '#include "DIR/...' of the file, with its line number
	while IFS=: read -r line dir; do
		[ -n "$dir" ] || continue
		if [ ! -d "$SRC/$dir" ]; then
			echo "$f:$line: includes from $dir/, which is no folder of $SRC" >&2
			bad=1
		elif [[ $ok != *" $dir "* ]]; then
			echo "$f:$line: $top/ may not include from $dir/ (a layer above it or beside it; see src/README.md)" >&2
			bad=1
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[A-Za-z0-9_]*/' "$f" |
		 sed 's,^\([0-9]*\):[^"]*"\([A-Za-z0-9_]*\)/.*,\1:\2,')
done < <(find "$SRC" -name '*.[ch]' | sort)
exit $bad
